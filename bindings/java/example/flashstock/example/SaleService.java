/*
 * SaleService.java -- a minimal HTTP flash-sale endpoint on flashstock,
 * with only the JDK (com.sun.net.httpserver).
 *
 *   java -cp flashstock.jar:example.jar flashstock.example.SaleService \
 *        --name SEG [--listen 127.0.0.1:PORT] [--threads N] [--activity A --sku S]
 *
 *   POST /order  {"user":N,"qty":1,"request_id":R[,"activity":A,"sku":S]}
 *                -> 200 {"order_no":N}
 *                -> 409 {"error":"FLASH_ESOLD_OUT"} for a refusal (sold out, limit, ...)
 *                -> 400 / 404 / 503 {"error":"FLASH_E..."} for bad input, unknown goods, other errors
 *   GET  /stock?activity=A&sku=S -> {"total":T,"available":V,"sold":S}
 *
 * --listen with port 0 picks a free port; the chosen one is printed on
 * stdout as "listening 127.0.0.1:PORT".  One FlashStock serves every
 * worker thread: each gets its own native handle behind it.
 */
package flashstock.example;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import flashstock.FlashException;
import flashstock.FlashStock;
import flashstock.OrderRequest;
import flashstock.OrderResult;
import flashstock.SkuInfo;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class SaleService {
	private final FlashStock fs;
	private final int activity;
	private final int sku;

	private SaleService(FlashStock fs, int activity, int sku) {
		this.fs = fs;
		this.activity = activity;
		this.sku = sku;
	}

	public static void main(String[] args) throws IOException, InterruptedException {
		String name = null, listen = "127.0.0.1:0";
		int threads = 8, activity = 1, sku = 1;
		for (int i = 0; i < args.length; i++) {
			String v = i + 1 < args.length ? args[i + 1] : null;
			switch (args[i]) {
			case "--name": name = v; i++; break;
			case "--listen": listen = v; i++; break;
			case "--threads": threads = Integer.parseInt(v); i++; break;
			case "--activity": activity = Integer.parseInt(v); i++; break;
			case "--sku": sku = Integer.parseInt(v); i++; break;
			default:
				System.err.println("usage: SaleService --name SEG [--listen HOST:PORT] [--threads N] [--activity A --sku S]");
				System.exit(2);
			}
		}
		if (name == null || listen == null || listen.lastIndexOf(':') < 0) {
			System.err.println("SaleService: --name SEG and --listen HOST:PORT are required");
			System.exit(2);
		}
		int colon = listen.lastIndexOf(':');
		InetSocketAddress addr = new InetSocketAddress(listen.substring(0, colon),
				Integer.parseInt(listen.substring(colon + 1)));

		FlashStock fs = FlashStock.open(name);
		SaleService svc = new SaleService(fs, activity, sku);
		HttpServer server = HttpServer.create(addr, 128);
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		server.setExecutor(pool);
		server.createContext("/order", svc::order);
		server.createContext("/stock", svc::stock);
		CountDownLatch stop = new CountDownLatch(1);
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			server.stop(0);
			pool.shutdown();
			fs.close();
			stop.countDown();
		}));
		server.start();
		System.out.println("listening " + addr.getHostString() + ":" + server.getAddress().getPort());
		System.out.flush();
		stop.await();
	}

	private static final Pattern FIELD = Pattern.compile("\"([a-z_]+)\"\\s*:\\s*(-?[0-9]+)");

	/* The numeric fields of a flat JSON object; -1 for a missing one. */
	private static long field(String body, String key) {
		Matcher m = FIELD.matcher(body);
		while (m.find())
			if (m.group(1).equals(key))
				return Long.parseLong(m.group(2));
		return -1;
	}

	private void order(HttpExchange ex) throws IOException {
		if (!ex.getRequestMethod().equals("POST")) {
			reply(ex, 405, "{\"error\":\"method\"}");
			return;
		}
		String body;
		try (InputStream in = ex.getRequestBody()) {
			body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
		}
		long user = field(body, "user"), qty = field(body, "qty"), rid = field(body, "request_id");
		long a = field(body, "activity"), s = field(body, "sku");
		if (user <= 0 || qty <= 0 || qty > Integer.MAX_VALUE) {
			reply(ex, 400, "{\"error\":\"FLASH_EINVAL\"}");
			return;
		}
		OrderRequest req = new OrderRequest(a > 0 ? (int) a : activity, s > 0 ? (int) s : sku, user, (int) qty, 0,
				rid > 0 ? rid : 0);
		try {
			OrderResult r = fs.order(req);
			if (r.ok())
				reply(ex, 200, "{\"order_no\":" + r.orderNo() + "}");
			else if (r.rc() == -7 && r.firstRc() == 0)   // a retry of a placed order: its number
				reply(ex, 200, "{\"order_no\":" + r.orderNo() + ",\"duplicate\":true}");
			else
				reply(ex, 409, "{\"error\":\"" + r.rcName() + "\"}");
		} catch (FlashException e) {
			int status = e instanceof FlashException.InvalidArgument ? 400
					: e instanceof FlashException.NotFound ? 404 : 503;
			reply(ex, status, "{\"error\":\"" + e.rcName() + "\"}");
		}
	}

	private void stock(HttpExchange ex) throws IOException {
		String q = ex.getRequestURI().getRawQuery();
		long a = -1, s = -1;
		if (q != null)
			for (String kv : q.split("&")) {
				String[] p = kv.split("=", 2);
				if (p.length == 2 && p[1].matches("[0-9]{1,10}")) {
					if (p[0].equals("activity"))
						a = Long.parseLong(p[1]);
					else if (p[0].equals("sku"))
						s = Long.parseLong(p[1]);
				}
			}
		if (a <= 0 || s <= 0) {
			reply(ex, 400, "{\"error\":\"FLASH_EINVAL\"}");
			return;
		}
		try {
			SkuInfo i = fs.skuGet((int) a, (int) s);
			reply(ex, 200, "{\"total\":" + i.total() + ",\"available\":" + i.available() + ",\"sold\":" + i.sold() + "}");
		} catch (FlashException e) {
			reply(ex, e instanceof FlashException.NotFound ? 404 : 503, "{\"error\":\"" + e.rcName() + "\"}");
		}
	}

	private static void reply(HttpExchange ex, int status, String json) throws IOException {
		byte[] b = json.getBytes(StandardCharsets.UTF_8);
		ex.getResponseHeaders().set("Content-Type", "application/json");
		ex.sendResponseHeaders(status, b.length);
		try (OutputStream out = ex.getResponseBody()) {
			out.write(b);
		}
	}
}
