/*
 * LayoutTest.java -- (java_layout) the structs Java reads and writes in a
 * handle's exchange area have the C compiler's sizes and offsets: every
 * "Class.FIELD value" line of native/layout_probe.c (compiled by CMake from
 * api/flashstock.h) equals Layout.Class.FIELD, and Layout has no constant
 * the probe does not print.
 */
package flashstock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class LayoutTest {
	@Test
	void everyMirroredOffsetAndSizeEqualsTheCCompilers() throws IOException, InterruptedException, IllegalAccessException {
		Process p = new ProcessBuilder(System.getProperty("flashstock.probe")).redirectErrorStream(true).start();
		String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
		assertEquals(0, p.waitFor(), "layout_probe exit: " + out);
		TreeMap<String, Integer> c = new TreeMap<>();
		for (String line : out.split("\n")) {
			if (line.isBlank())
				continue;
			String[] kv = line.trim().split(" ");
			c.put(kv[0], Integer.parseInt(kv[1]));
		}
		TreeMap<String, Integer> java = new TreeMap<>();
		for (Class<?> k : Layout.class.getDeclaredClasses())
			for (Field f : k.getDeclaredFields())
				if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
					f.setAccessible(true);
					java.put(k.getSimpleName() + "." + f.getName(), f.getInt(null));
				}
		assertTrue(c.size() > 90, "the probe printed " + c.size() + " lines");
		assertEquals(c, java, "Layout.java against the C compiler");
		System.out.println("layout: " + c.size() + " sizes and offsets agree with the C compiler");
	}
}
