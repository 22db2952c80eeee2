/*
 * LayoutTest.java -- (java_layout) the structs of api/flashstock.h that
 * Java reads and writes in a handle's exchange area have, in Layout.java,
 * the C compiler's sizes and offsets as the bindings' manifest records them
 * (Manifest.java): every field of each mirrored struct has its constant
 * there with its offset, every constant there names a field (or one of the
 * header's constants), and each difference is reported by its C name.
 * Layout.Io, Batch and FeedIo describe the binding's own exchange area
 * (native/fj_io.h), not the header's: flashstock_jni.c asserts them at
 * compile time.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class LayoutTest {
	/** Layout's classes and the structs they mirror */
	static final Map<String, String> STRUCTS = Map.ofEntries(
			Map.entry("SegOpts", "flash_seg_opts"), Map.entry("Activity", "flash_activity"),
			Map.entry("OrderReq", "flash_order_req"), Map.entry("OrderRes", "flash_order_res"),
			Map.entry("SkuInfo", "flash_sku_info"), Map.entry("OrderInfo", "flash_order_info"),
			Map.entry("CartLine", "flash_cart_line"), Map.entry("CartReq", "flash_cart_req"),
			Map.entry("CartRes", "flash_cart_res"),
			Map.entry("Stats", "flash_stats"), Map.entry("Ident", "flash_ident"),
			Map.entry("Quiet", "flash_quiet"), Map.entry("Record", "flash_record"),
			Map.entry("FeedRec", "flash_feed_rec"), Map.entry("FeedInfo", "flash_feed_info"),
			Map.entry("Hist", "flash_hist"), Map.entry("Obs", "flash_obs"));

	/** Layout's constants that are the header's constants */
	static final Map<String, String> CONSTANTS = Map.of(
			"FeedInfo.NAME_MAX", "FLASH_FEED_NAME_MAX", "Hist.BUCKETS", "FLASH_OBS_BUCKETS",
			"Obs.TIMES", "FLASH_TIMES", "Obs.OPS", "FLASH_OP_COUNT", "Obs.CODES", "FLASH_OBS_CODES",
			"Obs.LOCK_WAIT", "FLASH_TIME_LOCK_WAIT", "Obs.LOCK_HOLD", "FLASH_TIME_LOCK_HOLD",
			"CartReq.LINES_MAX", "FLASH_CART_LINES_MAX", "Record.F_CART", "FLASH_REC_F_CART",
			"Record.F_LAST", "FLASH_REC_F_LAST");

	/** The Java name of a C field: upper case, without a leading '_' and
	 *  without the member prefix all of its struct's fields share (fr_, fi_). */
	static String javaName(Manifest.Struct s, String field) {
		String prefix = field.matches("[a-z]+_.*") ? field.substring(0, field.indexOf('_') + 1) : "";
		for (Manifest.Field f : s.fields())
			if (!f.name().startsWith(prefix))
				prefix = "";
		return field.substring(prefix.length()).replaceFirst("^_", "").toUpperCase();
	}

	/** Layout's int constants of the mirroring classes, "Class.NAME" to value. */
	static TreeMap<String, Long> layoutConstants() throws IllegalAccessException {
		TreeMap<String, Long> java = new TreeMap<>();
		for (Class<?> k : Layout.class.getDeclaredClasses())
			if (STRUCTS.containsKey(k.getSimpleName()))
				for (Field f : k.getDeclaredFields())
					if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
						f.setAccessible(true);
						java.put(k.getSimpleName() + "." + f.getName(), (long) f.getInt(null));
					}
		return java;
	}

	/** One line per difference between the manifest and Layout's constants
	 *  @p java, each naming the C struct and field (or constant). */
	static List<String> differences(Manifest m, TreeMap<String, Long> java) {
		List<String> out = new ArrayList<>();
		TreeMap<String, Long> left = new TreeMap<>(java);
		for (Map.Entry<String, String> e : new TreeMap<>(STRUCTS).entrySet()) {
			String cls = e.getKey();
			Manifest.Struct s = m.structs.get(e.getValue());
			if (s == null) {
				out.add("struct " + e.getValue() + ": not in the manifest (Layout." + cls + ")");
				continue;
			}
			check(out, left, "struct " + s.name() + " size", "Layout." + cls + ".SIZE", s.size());
			for (Manifest.Field f : s.fields())
				check(out, left, s.name() + "." + f.name() + " offset",
						"Layout." + cls + "." + javaName(s, f.name()), f.offset());
		}
		for (Map.Entry<String, String> e : new TreeMap<>(CONSTANTS).entrySet()) {
			Long v = m.constants.get(e.getValue());
			if (v == null)
				out.add(e.getValue() + ": not in the manifest (Layout." + e.getKey() + ")");
			else
				check(out, left, e.getValue(), "Layout." + e.getKey(), v);
		}
		for (String k : left.keySet())
			out.add("Layout." + k + ": neither a field of " + STRUCTS.get(k.substring(0, k.indexOf('.')))
					+ " nor a constant of the header");
		return out;
	}

	static void check(List<String> out, TreeMap<String, Long> left, String c, String javaName, long value) {
		Long j = left.remove(javaName.substring("Layout.".length()));
		if (j == null)
			out.add(c + " is " + value + ": no " + javaName);
		else if (j != value)
			out.add(c + " is " + value + ", " + javaName + " is " + j);
	}

	@Test
	void everyMirroredOffsetAndSizeEqualsTheManifests() throws IOException, IllegalAccessException {
		TreeMap<String, Long> java = layoutConstants();
		List<String> diff = differences(Manifest.read(), java);
		assertTrue(diff.isEmpty(), "Layout.java against the manifest (the C compiler's layout):\n  "
				+ String.join("\n  ", diff));
		assertTrue(java.size() > 90, "Layout has " + java.size() + " constants");
		System.out.println("layout: " + java.size() + " sizes, offsets and constants agree with the manifest");
	}

	/** The check finds a layout the header changed: a field moved, a field
	 *  added, a struct grown and a constant changed give a line each. */
	@Test
	void aManifestThatDiffersIsReportedByTheCNameOfEachDifference() throws IOException, IllegalAccessException {
		Manifest m = Manifest.read();
		List<Manifest.Field> stats = m.structs.get("flash_stats").fields();
		Manifest.Field moved = stats.get(1);
		stats.set(1, new Manifest.Field(moved.name(), moved.offset() + 8, moved.size()));
		m.structs.get("flash_order_req").fields().add(new Manifest.Field("planted", 40, 8));
		Manifest.Struct q = m.structs.get("flash_quiet");
		m.structs.put("flash_quiet", new Manifest.Struct(q.name(), q.size() + 8, q.fields()));
		m.constants.put("FLASH_OBS_BUCKETS", m.constants.get("FLASH_OBS_BUCKETS") + 1);
		List<String> diff = differences(m, layoutConstants());
		assertEquals(4, diff.size(), diff.toString());
		String all = String.join("\n", diff);
		for (String w : List.of("flash_stats." + moved.name() + " offset is", "flash_order_req.planted offset is 40: no Layout.OrderReq.PLANTED",
				"struct flash_quiet size is", "FLASH_OBS_BUCKETS is"))
			assertTrue(all.contains(w), "no \"" + w + "\" in:\n" + all);
	}
}
