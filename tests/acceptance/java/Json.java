import java.util.Collection;
import java.util.Map;

/** Just enough JSON for maps, lists, strings, numbers, booleans and null: the probes' answers
 * to the Python side, with the kafka-clients jar alone on the classpath (no JSON library). */
final class Json {
    private Json() {
    }

    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        append(out, value);
        return out.toString();
    }

    private static void append(StringBuilder out, Object value) {
        if (value == null || value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.append(sep);
                string(out, String.valueOf(e.getKey()));
                out.append(':');
                append(out, e.getValue());
                sep = ",";
            }
            out.append('}');
        } else if (value instanceof Collection<?> items) {
            out.append('[');
            String sep = "";
            for (Object item : items) {
                out.append(sep);
                append(out, item);
                sep = ",";
            }
            out.append(']');
        } else {
            string(out, value.toString());
        }
    }

    private static void string(StringBuilder out, String text) {
        out.append('"');
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
