/*
 * Manifest.java -- flashstock.manifest, read: the C compiler's view of
 * api/flashstock.h that the bindings are tested against, generated at build
 * time (bindings/manifest/manifest.py; its path is the system property
 * flashstock.manifest).  Lines: "const NAME VALUE", "enum NAME VALUE",
 * "struct NAME SIZE NFIELDS", "field STRUCT.FIELD OFFSET SIZE".
 */
package flashstock;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Manifest {
	record Field(String name, long offset, long size) {}

	record Struct(String name, long size, List<Field> fields) {}

	/** every "const" and "enum" line, in order */
	final Map<String, Long> constants = new LinkedHashMap<>();
	/** every struct, in the header's order */
	final Map<String, Struct> structs = new LinkedHashMap<>();

	/** The manifest the build generated (system property flashstock.manifest). */
	static Manifest read() throws IOException {
		return parse(Path.of(System.getProperty("flashstock.manifest")));
	}

	static Manifest parse(Path path) throws IOException {
		Manifest m = new Manifest();
		Map<String, Integer> announced = new LinkedHashMap<>();
		int n = 0;
		for (String line : Files.readAllLines(path)) {
			n++;
			String[] w = line.trim().split("\\s+");
			String where = path + ":" + n + ": cannot read \"" + line + "\"";
			try {
				if (w.length == 3 && (w[0].equals("const") || w[0].equals("enum"))) {
					m.constants.put(w[1], Long.parseLong(w[2]));
				} else if (w.length == 4 && w[0].equals("struct")) {
					m.structs.put(w[1], new Struct(w[1], Long.parseLong(w[2]), new ArrayList<>()));
					announced.put(w[1], Integer.parseInt(w[3]));
				} else if (w.length == 4 && w[0].equals("field") && w[1].contains(".")) {
					String[] sf = w[1].split("\\.", 2);
					Struct s = m.structs.get(sf[0]);
					if (s == null)
						throw new IOException(where + " (field before its struct)");
					s.fields().add(new Field(sf[1], Long.parseLong(w[2]), Long.parseLong(w[3])));
				} else {
					throw new IOException(where);
				}
			} catch (NumberFormatException e) {
				throw new IOException(where, e);
			}
		}
		for (Map.Entry<String, Integer> e : announced.entrySet())
			if (m.structs.get(e.getKey()).fields().size() != e.getValue())
				throw new IOException(path + ": struct " + e.getKey() + ": " + e.getValue()
						+ " fields announced, " + m.structs.get(e.getKey()).fields().size() + " listed");
		return m;
	}

	/** the result codes: every FLASH_E* constant below zero, in the header's order */
	Map<String, Integer> codes() {
		Map<String, Integer> codes = new LinkedHashMap<>();
		for (Map.Entry<String, Long> e : constants.entrySet())
			if (e.getKey().startsWith("FLASH_E") && e.getValue() < 0)
				codes.put(e.getKey(), (int) (long) e.getValue());
		return codes;
	}
}
