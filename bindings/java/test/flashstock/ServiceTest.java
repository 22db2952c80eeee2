/*
 * ServiceTest.java -- (java_service) the example service
 * (example/flashstock/example/SaleService.java) started as its own JVM on a
 * fresh segment with a private `flashstock serve`, driven by 8 concurrent
 * HTTP clients ordering far more than the stock (every user twice, limit
 * 1): exactly the stock succeeds, no user gets two orders, the refusals
 * are 409 with their FLASH_E name, GET /stock agrees, and after both
 * processes stop `flashstock reconcile` exits 0.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class ServiceTest {
	static final int STOCK = 50, USERS = 120, CLIENTS = 8;

	@Test
	void concurrentClientsBuyExactlyTheStockOncePerUserAndTheRecordsAgree() throws Exception {
		Path dir = Files.createTempDirectory("flash-java-service-");
		Path wal = dir.resolve("wal"), serveLog = dir.resolve("serve.log");
		Process serve = null, svc = null;
		try (Seg s = new Seg("service")) {
			try (FlashStock fs = FlashStock.open(s.name)) {
				fs.activityAdd(Activity.openNow(1, 1));
				fs.skuAdd(1, 1, STOCK, 2);
			}
			serve = Procs.serve(s.name, wal, serveLog);
			svc = new ProcessBuilder(System.getProperty("flashstock.java"), "-Xmx64m",
					"-Dflashstock.library=" + System.getProperty("flashstock.library"), "-cp",
					System.getProperty("flashstock.classpath"), "flashstock.example.SaleService", "--name", s.name,
					"--listen", "127.0.0.1:0").redirectError(dir.resolve("svc.err").toFile()).start();
			BufferedReader out = new BufferedReader(new InputStreamReader(svc.getInputStream(), StandardCharsets.UTF_8));
			String line = out.readLine();
			assertTrue(line != null && line.startsWith("listening 127.0.0.1:"),
					"service said " + line + "; " + Files.readString(dir.resolve("svc.err")));
			String base = "http://" + line.substring("listening ".length());

			HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
			Map<Long, AtomicInteger> perUser = new ConcurrentHashMap<>();
			Map<String, AtomicInteger> refusals = new ConcurrentHashMap<>();
			AtomicInteger ok = new AtomicInteger(), next = new AtomicInteger();
			AtomicReference<Throwable> err = new AtomicReference<>();
			List<Thread> ts = new ArrayList<>();
			for (int c = 0; c < CLIENTS; c++) {
				Thread t = new Thread(() -> {
					try {
						for (int i; (i = next.getAndIncrement()) < 2 * USERS;) {
							long user = 1 + i % USERS;
							String body = "{\"user\":" + user + ",\"qty\":1,\"request_id\":" + (1000 + i) + "}";
							HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/order"))
									.POST(HttpRequest.BodyPublishers.ofString(body)).build(),
									HttpResponse.BodyHandlers.ofString());
							if (r.statusCode() == 200) {
								assertTrue(r.body().matches("\\{\"order_no\":[1-9][0-9]*\\}"), r.body());
								ok.incrementAndGet();
								perUser.computeIfAbsent(user, u -> new AtomicInteger()).incrementAndGet();
							} else {
								assertEquals(409, r.statusCode(), r.body());
								String e = r.body().replaceAll(".*\"error\":\"([A-Z_]+)\".*", "$1");
								assertTrue(e.equals("FLASH_ESOLD_OUT") || e.equals("FLASH_ELIMIT"), r.body());
								refusals.computeIfAbsent(e, k -> new AtomicInteger()).incrementAndGet();
							}
						}
					} catch (Throwable e) {
						err.compareAndSet(null, e);
					}
				});
				ts.add(t);
				t.start();
			}
			for (Thread t : ts)
				t.join();
			if (err.get() != null)
				throw new AssertionError("a client failed", err.get());
			assertEquals(STOCK, ok.get(), "orders placed");
			int worst = perUser.values().stream().mapToInt(AtomicInteger::get).max().orElse(0);
			assertEquals(1, worst, "most orders of one user");
			HttpResponse<String> st = http.send(HttpRequest.newBuilder(URI.create(base + "/stock?activity=1&sku=1"))
					.build(), HttpResponse.BodyHandlers.ofString());
			assertEquals(200, st.statusCode());
			assertEquals("{\"total\":" + STOCK + ",\"available\":0,\"sold\":" + STOCK + "}", st.body());
			HttpResponse<String> bad = http.send(HttpRequest.newBuilder(URI.create(base + "/order"))
					.POST(HttpRequest.BodyPublishers.ofString("{\"user\":1,\"qty\":1,\"sku\":9}")).build(),
					HttpResponse.BodyHandlers.ofString());
			assertEquals(404, bad.statusCode());
			assertEquals("{\"error\":\"FLASH_ENOT_FOUND\"}", bad.body());

			svc.destroy();  // SIGTERM: the shutdown hook closes the FlashStock
			assertTrue(svc.waitFor(30, TimeUnit.SECONDS), "service did not stop");
			svc = null;
			try (FlashStock fs = FlashStock.open(s.name)) {
				Procs.awaitQuiet(fs);
			}
			Procs.stopServe(serve, serveLog);
			serve = null;
			Procs.Result rec = Procs.cli(dir, "reconcile", "--name", s.name, "--wal", wal.toString());
			System.out.print(rec.out());
			assertEquals(0, rec.rc(), "reconcile: " + rec.out());
			long walOrders = Procs.walDump(dir, wal).stream().filter(r -> r.type().equals("order")).count();
			assertEquals(STOCK, walOrders, "orders in the WAL");
			System.out.println("service: " + CLIENTS + " clients, " + 2 * USERS + " requests: " + ok.get()
					+ " placed, refused " + refusals + ", " + walOrders + " orders in the WAL");
		} finally {
			if (svc != null)
				svc.destroyForcibly().waitFor();
			if (serve != null)
				serve.destroyForcibly().waitFor();
			Procs.rmrf(dir);
		}
	}
}
