/*
 * Procs.java -- what the multi-process tests run: the flashstock command
 * (system property flashstock.cli), a private `flashstock serve` daemon on
 * a WAL in a temporary directory, and JVMs of this build's class path.
 */
package flashstock;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

final class Procs {
	private Procs() {}

	static final String CLI = System.getProperty("flashstock.cli");

	record Result(int rc, String out) {}

	/** Run `flashstock ARGS...` to its end; its exit code and output (stdout and stderr). */
	static Result cli(Path dir, String... args) throws IOException, InterruptedException {
		List<String> cmd = new ArrayList<>();
		cmd.add(CLI);
		cmd.addAll(List.of(args));
		File out = Files.createTempFile(dir, "cli", ".out").toFile();
		Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out).start();
		int rc = p.waitFor();
		return new Result(rc, Files.readString(out.toPath(), StandardCharsets.UTF_8));
	}

	/** A JVM running {@code main} of this build's class path. */
	static Process java(Path log, String main, String... args) throws IOException {
		List<String> cmd = new ArrayList<>(List.of(System.getProperty("flashstock.java"), "-Xmx64m", "-Xss512k",
				"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
				"-Dflashstock.library=" + System.getProperty("flashstock.library"),
				"-cp", System.getProperty("flashstock.classpath"), main));
		cmd.addAll(List.of(args));
		return new ProcessBuilder(cmd).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
	}

	/** `flashstock serve --name SEG --wal WAL`, started and serving (its log in LOG). */
	static Process serve(String seg, Path wal, Path log) throws IOException, InterruptedException {
		Process p = new ProcessBuilder(CLI, "serve", "--name", seg, "--wal", wal.toString(), "--no-snapshot",
				"--recover-ms", "200").redirectErrorStream(true).redirectOutput(log.toFile()).start();
		for (int i = 0; i < 400; i++) {
			if (Files.readString(log).contains("serving segment"))
				return p;
			if (!p.isAlive())
				throw new AssertionError("serve exited " + p.exitValue() + ": " + Files.readString(log));
			Thread.sleep(25);
		}
		p.destroyForcibly().waitFor();
		throw new AssertionError("serve did not start: " + Files.readString(log));
	}

	/** SIGTERM the daemon: it drains, syncs and must exit 0. */
	static void stopServe(Process p, Path log) throws IOException, InterruptedException {
		p.destroy();
		if (!p.waitFor(60, TimeUnit.SECONDS)) {
			p.destroyForcibly().waitFor();
			throw new AssertionError("serve did not stop after SIGTERM: " + Files.readString(log));
		}
		if (p.exitValue() != 0)
			throw new AssertionError("serve exit " + p.exitValue() + " after SIGTERM: " + Files.readString(log));
	}

	/*
	 * Wait until every dead handle is recovered and every record is durable
	 * (flash_quiet_get: nothing pending, nothing in flight), at most 60 s.
	 */
	static void awaitQuiet(FlashStock fs) throws InterruptedException {
		for (int i = 0; i < 1200; i++) {
			fs.recover();
			Quiet q = fs.quiet();
			if (q.quiet())
				return;
			Thread.sleep(50);
		}
		throw new AssertionError("the segment did not become quiet: " + fs.quiet());
	}

	/** Remove a directory tree (the test's temporary directory). */
	static void rmrf(Path dir) throws IOException {
		if (dir == null || !Files.exists(dir))
			return;
		try (var s = Files.walk(dir)) {
			s.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
		}
	}

	/** The WAL's records: `flashstock wal dump --wal DIR`, parsed. */
	record Rec(String type, int activity, int sku, int qty, long order, long user) {}

	/**
	 * The kinds of the records of each order number, in WAL order: "order",
	 * "cancel", "confirm", "expire".
	 */
	static java.util.Map<Long, List<String>> walKindsByOrder(Path dir, Path wal)
			throws IOException, InterruptedException {
		Result r = cli(dir, "wal", "dump", "--wal", wal.toString());
		if (r.rc() != 0)
			throw new AssertionError("wal dump exit " + r.rc() + ": " + r.out());
		java.util.regex.Pattern p = java.util.regex.Pattern.compile(
				"^[0-9]+ (order|cancel|confirm|expire) slot=[0-9]+ seq=[0-9]+ .*\\border(?:_no)?=([0-9]+)\\b");
		java.util.Map<Long, List<String>> kinds = new java.util.HashMap<>();
		for (String line : r.out().split("\n")) {
			java.util.regex.Matcher m = p.matcher(line);
			if (m.find())
				kinds.computeIfAbsent(Long.parseLong(m.group(2)), k -> new ArrayList<>()).add(m.group(1));
		}
		return kinds;
	}

	static List<Rec> walDump(Path dir, Path wal) throws IOException, InterruptedException {
		Result r = cli(dir, "wal", "dump", "--wal", wal.toString());
		if (r.rc() != 0)
			throw new AssertionError("wal dump exit " + r.rc() + ": " + r.out());
		java.util.regex.Pattern p = java.util.regex.Pattern.compile(
				"^[0-9]+ ([a-z]+) slot=[0-9]+ seq=[0-9]+ activity=([0-9]+) sku=([0-9]+) qty=([0-9]+) order=([0-9]+) user=([0-9]+) ");
		List<Rec> recs = new ArrayList<>();
		for (String line : r.out().split("\n")) {
			java.util.regex.Matcher m = p.matcher(line);
			if (m.find())
				recs.add(new Rec(m.group(1), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)),
						Integer.parseInt(m.group(4)), Long.parseLong(m.group(5)), Long.parseLong(m.group(6))));
		}
		return recs;
	}
}
