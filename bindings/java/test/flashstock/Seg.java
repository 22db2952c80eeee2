/*
 * Seg.java -- a test's own segment: a unique name (the test's pid and a
 * counter), small tables, destroyed by close().
 */
package flashstock;

import java.util.concurrent.atomic.AtomicInteger;

final class Seg implements AutoCloseable {
	private static final AtomicInteger N = new AtomicInteger();
	final String name;

	Seg(String what, SegOpts opts) {
		name = "/flash-java-" + what + "-" + ProcessHandle.current().pid() + "-" + N.incrementAndGet();
		FlashStock.createSegment(name, opts);
	}

	Seg(String what) {
		this(what, SegOpts.small(4096));
	}

	@Override
	public void close() {
		try {
			FlashStock.destroySegment(name);
		} catch (FlashException.NoSegment e) {
			// the test removed it itself
		}
	}
}
