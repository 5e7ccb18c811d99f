package kafkacoop;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Phase markers and refused event records in the JVM step, refused with exactly the dead-letter reasons
 * of the Python reference: `parse` is `_markers.parse_marker` (pydantic's strict JSON mode, its first
 * error), `refusal` is `_versions.refusal` (the `v` that Python's `json.loads` reads). Each reads the
 * record with its own JSON parser, as strict as the Python one it stands for.
 *
 * <p>Known differences: a `phase` or `phases` above 2^63-1 is refused here ("Input should be less than
 * or equal to 9223372036854775807"), pydantic takes it; `json.loads` gives up on nesting at about
 * 1000 levels less its caller's Python stack, this at more than {@value #PY_MAX_DEPTH}.
 */
public final class PhaseMarkers {
  public record Marker(long tsMs, String group, String migration, long phase, long phases) {}

  static final int EVENT_VERSION = 1;
  static final int MAX_PARSED = 64 * 1024;
  static final int JITER_MAX_DEPTH = 200;  // non-empty containers
  static final int PY_MAX_DEPTH = 900;  // containers
  static final int MAX_INT_DIGITS = 4300;
  static final String[] FIELDS = {"v", "ts_ms", "group", "migration", "phase", "phases"};
  private static final String INVALID_JSON = "marker: invalid JSON";
  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  private PhaseMarkers() {}

  /** The marker, or null with the reason in why[0]. */
  public static Marker parse(byte[] raw, String[] why) {
    Object doc = raw == null ? null : Json.read(strictUtf8(raw), false);
    if (doc == null) {
      why[0] = INVALID_JSON;
      return null;
    }
    if (!(doc instanceof Map<?, ?>)) {
      why[0] = "marker record: Input should be an object";
      return null;
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) doc;
    String problem = m.containsKey("v") ? one(m.get("v")) : null;
    if (problem != null) {
      return refuse(why, "v", problem);
    }
    long[] ints = new long[3];
    String[] texts = new String[2];
    for (int f = 1; f < FIELDS.length; f++) {
      String name = FIELDS[f];
      if (!m.containsKey(name)) {
        return refuse(why, name, "Field required");
      }
      Object value = m.get(name);
      problem = f == 2 || f == 3 ? string(value, f == 3) : integer(value, f == 1 ? null : BigInteger.valueOf(f - 4));
      if (problem != null) {
        return refuse(why, name, problem);
      }
      if (f == 2 || f == 3) {
        texts[f - 2] = (String) value;
      } else {
        ints[f == 1 ? 0 : f - 3] = ((Num) value).big().longValue();
      }
    }
    for (String key : m.keySet()) {
      if (indexOf(key) < 0) {
        return refuse(why, key.isEmpty() ? "record" : key, "Extra inputs are not permitted");
      }
    }
    return new Marker(ints[0], texts[0], texts[1], ints[1], ints[2]);
  }

  /** _versions.refusal: the dead letter's reason for a record the decoder refused with `reason`. */
  public static String refusal(String reason, byte[] raw) {
    BigInteger v = newerVersion(raw);
    return v == null ? reason : "unsupported version " + v;
  }

  /** The `v` of a JSON object whose whole-number `v` is above EVENT_VERSION, else null. */
  static BigInteger newerVersion(byte[] raw) {
    if (raw == null || raw.length > MAX_PARSED) {
      return null;
    }
    String text = pythonDecode(raw);
    Object doc = text == null ? null : Json.read(text, true);
    if (!(doc instanceof Map<?, ?> m) || !(m.get("v") instanceof Num v)) {
      return null;
    }
    BigInteger n;
    if (v.integral()) {
      n = v.big();
    } else {
      double d = Double.parseDouble(v.text());
      if (Double.isInfinite(d) || d != Math.rint(d)) {  // also NaN
        return null;
      }
      n = new BigDecimal(d).toBigInteger();
    }
    return n.compareTo(BigInteger.valueOf(EVENT_VERSION)) > 0 ? n : null;
  }

  private static Marker refuse(String[] why, String where, String msg) {
    why[0] = "marker " + where + ": " + msg;
    return null;
  }

  private static int indexOf(String key) {
    for (int f = 0; f < FIELDS.length; f++) {
      if (FIELDS[f].equals(key)) {
        return f;
      }
    }
    return -1;
  }

  /** `Literal[1]`, strict: 1, 1.0 or true. */
  private static String one(Object value) {
    if (value == Boolean.TRUE) {
      return null;
    }
    if (value instanceof Num n && n.integral()) {
      BigInteger big = n.big();
      if (big.bitLength() > 63) {
        return "Unable to parse input string as an integer, exceeded maximum size";
      }
      return big.equals(BigInteger.ONE) ? null : "Input should be 1";
    }
    if (value instanceof Num n && Double.parseDouble(n.text()) == 1.0) {
      return null;
    }
    return "Input should be 1";
  }

  /** A strict int: int64 when `min` is null, else at least `min` (and, here, at most 2^63-1). */
  private static String integer(Object value, BigInteger min) {
    if (!(value instanceof Num n) || !n.integral()) {
      return "Input should be a valid integer";
    }
    BigInteger big = n.big();
    BigInteger low = min == null ? LONG_MIN : min;
    if (big.compareTo(low) < 0) {
      return "Input should be greater than or equal to " + low;
    }
    return big.compareTo(LONG_MAX) > 0 ? "Input should be less than or equal to " + LONG_MAX : null;
  }

  private static String string(Object value, boolean nonEmpty) {
    if (!(value instanceof String s)) {
      return "Input should be a valid string";
    }
    return nonEmpty && s.isEmpty() ? "String should have at least 1 character" : null;
  }

  // --- decoding ---------------------------------------------------------------------------------

  /** UTF-8 as Rust reads it (no surrogates, no overlong forms), or null. */
  static String strictUtf8(byte[] raw) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(raw))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  /** `bytes.decode(json.detect_encoding(raw), "surrogatepass")`, or null where Python raises. */
  static String pythonDecode(byte[] b) {
    int n = b.length;
    if (n >= 4 && (b[0] == 0 && b[1] == 0 && (b[2] & 0xff) == 0xfe && (b[3] & 0xff) == 0xff)) {
      return utf32(b, 4, true);
    }
    if (n >= 4 && ((b[0] & 0xff) == 0xff && (b[1] & 0xff) == 0xfe && b[2] == 0 && b[3] == 0)) {
      return utf32(b, 4, false);
    }
    if (n >= 2 && (b[0] & 0xff) == 0xfe && (b[1] & 0xff) == 0xff) {
      return utf16(b, 2, true);
    }
    if (n >= 2 && (b[0] & 0xff) == 0xff && (b[1] & 0xff) == 0xfe) {
      return utf16(b, 2, false);
    }
    if (n >= 3 && (b[0] & 0xff) == 0xef && (b[1] & 0xff) == 0xbb && (b[2] & 0xff) == 0xbf) {
      return utf8(b, 3);
    }
    if (n >= 4) {
      if (b[0] == 0) {
        return b[1] != 0 ? utf16(b, 0, true) : utf32(b, 0, true);
      }
      if (b[1] == 0) {
        return b[2] != 0 || b[3] != 0 ? utf16(b, 0, false) : utf32(b, 0, false);
      }
    } else if (n == 2) {
      if (b[0] == 0) {
        return utf16(b, 0, true);
      }
      if (b[1] == 0) {
        return utf16(b, 0, false);
      }
    }
    return utf8(b, 0);
  }

  private static String utf16(byte[] b, int from, boolean bigEndian) {
    if ((b.length - from) % 2 != 0) {
      return null;
    }
    StringBuilder out = new StringBuilder((b.length - from) / 2);
    for (int i = from; i < b.length; i += 2) {
      int hi = b[bigEndian ? i : i + 1] & 0xff;
      int lo = b[bigEndian ? i + 1 : i] & 0xff;
      out.append((char) (hi << 8 | lo));
    }
    return out.toString();
  }

  private static String utf32(byte[] b, int from, boolean bigEndian) {
    if ((b.length - from) % 4 != 0) {
      return null;
    }
    StringBuilder out = new StringBuilder((b.length - from) / 4);
    for (int i = from; i < b.length; i += 4) {
      long c = 0;
      for (int k = 0; k < 4; k++) {
        c = c << 8 | (b[bigEndian ? i + k : i + 3 - k] & 0xff);
      }
      if (c > 0x10ffff) {
        return null;
      }
      out.appendCodePoint((int) c);
    }
    return out.toString();
  }

  /** Python's UTF-8 decoder with "surrogatepass": strict, but an encoded surrogate passes. */
  private static String utf8(byte[] b, int from) {
    StringBuilder out = new StringBuilder(b.length - from);
    int i = from;
    while (i < b.length) {
      int c = b[i] & 0xff;
      int need;
      int min;
      int max;
      if (c < 0x80) {
        out.append((char) c);
        i++;
        continue;
      } else if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
        min = 0x80;
        max = 0xbf;
      } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        min = c == 0xe0 ? 0xa0 : 0x80;
        max = 0xbf;
      } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        min = c == 0xf0 ? 0x90 : 0x80;
        max = c == 0xf4 ? 0x8f : 0xbf;
      } else {
        return null;
      }
      if (i + need >= b.length) {
        return null;
      }
      int second = b[i + 1] & 0xff;
      if (second < min || second > max) {
        return null;
      }
      int cp = c & (0x3f >> need);
      for (int k = 1; k <= need; k++) {
        int cont = b[i + k] & 0xff;
        if ((cont & 0xc0) != 0x80) {
          return null;
        }
        cp = cp << 6 | (cont & 0x3f);
      }
      out.appendCodePoint(cp);
      i += need + 1;
    }
    return out.toString();
  }

  // --- JSON -------------------------------------------------------------------------------------

  /** A number token: its text, and whether it is an integer (no fraction, no exponent, not NaN/Inf). */
  record Num(String text, boolean integral) {
    BigInteger big() {
      return new BigInteger(text);
    }
  }

  /**
   * A strict JSON reader, jiter's rules (pydantic) or Python's json module's: the top level object's
   * keys and values (the last of a duplicate key; containers below it are checked, not kept).
   */
  static final class Json {
    private static final Object NULL = new Object();
    private static final Object NESTED = new Object();
    private static final Invalid INVALID = new Invalid();

    private static final class Invalid extends Exception {
      private static final long serialVersionUID = 1L;

      Invalid() {
        super(null, null, false, false);
      }
    }

    private final String s;
    private final int n;
    private final boolean python;
    private int i;
    private int depth;

    private Json(String s, boolean python) {
      this.s = s;
      this.n = s.length();
      this.python = python;
    }

    /** The document (a Map for an object, NESTED for an array, NULL for null), or null when invalid. */
    static Object read(String text, boolean python) {
      if (text == null) {
        return null;
      }
      Json json = new Json(text, python);
      try {
        json.space();
        Object value = json.value(true);
        json.space();
        return json.i == json.n ? value : null;
      } catch (Invalid e) {
        return null;
      }
    }

    private void space() {
      while (i < n) {
        char c = s.charAt(i);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
          return;
        }
        i++;
      }
    }

    private boolean at(char c) {
      return i < n && s.charAt(i) == c;
    }

    private boolean digit() {
      return i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9';
    }

    /** One digit or more (a fraction's, an exponent's). */
    private void digits() throws Invalid {
      if (!digit()) {
        throw INVALID;
      }
      while (digit()) {
        i++;
      }
    }

    private void word(String w) throws Invalid {
      if (!s.startsWith(w, i)) {
        throw INVALID;
      }
      i += w.length();
    }

    private Object value(boolean top) throws Invalid {
      if (i >= n) {
        throw INVALID;
      }
      switch (s.charAt(i)) {
        case '{': return container(true, top);
        case '[': return container(false, top);
        case '"': return string();
        case 't': word("true"); return Boolean.TRUE;
        case 'f': word("false"); return Boolean.FALSE;
        case 'n': word("null"); return NULL;
        case 'N': word("NaN"); return new Num("NaN", false);
        case 'I': word("Infinity"); return new Num("Infinity", false);
        default: return number();
      }
    }

    private Num number() throws Invalid {
      int start = i;
      if (at('-')) {
        i++;
        if (at('I')) {
          word("Infinity");
          return new Num("-Infinity", false);
        }
      }
      int first = i;
      if (at('0')) {
        i++;
      } else if (digit()) {
        while (digit()) {
          i++;
        }
      } else {
        throw INVALID;
      }
      int digits = i - first;
      boolean integral = true;
      if (at('.')) {
        i++;
        digits();
        integral = false;
      }
      if (at('e') || at('E')) {
        i++;
        if (at('+') || at('-')) {
          i++;
        }
        digits();
        integral = false;
      }
      // jiter: no number with more integer digits; Python: int() of a longer integer raises
      if (digits > MAX_INT_DIGITS && (integral || !python)) {
        throw INVALID;
      }
      return new Num(s.substring(start, i), integral);
    }

    private String string() throws Invalid {
      i++;
      StringBuilder out = new StringBuilder();
      while (true) {
        if (i >= n) {
          throw INVALID;
        }
        char c = s.charAt(i++);
        if (c == '"') {
          return out.toString();
        }
        if (c < 0x20) {
          throw INVALID;
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        if (i >= n) {
          throw INVALID;
        }
        char e = s.charAt(i++);
        switch (e) {
          case '"': case '\\': case '/': out.append(e); break;
          case 'b': out.append('\b'); break;
          case 'f': out.append('\f'); break;
          case 'n': out.append('\n'); break;
          case 'r': out.append('\r'); break;
          case 't': out.append('\t'); break;
          case 'u':
            char u = hex4();
            if (!python && Character.isSurrogate(u)) {  // jiter: only a high and low pair of escapes
              if (Character.isLowSurrogate(u) || !s.startsWith("\\u", i)) {
                throw INVALID;
              }
              i += 2;
              char low = hex4();
              if (!Character.isLowSurrogate(low)) {
                throw INVALID;
              }
              out.append(u);
              u = low;
            }
            out.append(u);
            break;
          default: throw INVALID;
        }
      }
    }

    private char hex4() throws Invalid {
      if (i + 4 > n) {
        throw INVALID;
      }
      int v = 0;
      for (int k = 0; k < 4; k++) {
        int d = Character.digit(s.charAt(i + k), 16);
        if (d < 0 || s.charAt(i + k) > 'f') {  // ASCII hex digits only
          throw INVALID;
        }
        v = v << 4 | d;
      }
      i += 4;
      return (char) v;
    }

    private Object container(boolean object, boolean top) throws Invalid {
      char close = object ? '}' : ']';
      i++;
      space();
      boolean empty = at(close);
      boolean counted = python || !empty;
      if (counted && ++depth > (python ? PY_MAX_DEPTH : JITER_MAX_DEPTH)) {
        throw INVALID;
      }
      Map<String, Object> map = object && top ? new LinkedHashMap<>() : null;
      if (empty) {
        i++;
      } else {
        while (true) {
          String key = null;
          if (object) {
            if (!at('"')) {
              throw INVALID;
            }
            key = string();
            space();
            if (!at(':')) {
              throw INVALID;
            }
            i++;
            space();
          }
          Object value = value(false);
          if (map != null) {
            map.put(key, value);
          }
          space();
          if (at(',')) {
            i++;
            space();
          } else if (at(close)) {
            i++;
            break;
          } else {
            throw INVALID;
          }
        }
      }
      if (counted) {
        depth--;
      }
      return map != null ? map : NESTED;
    }
  }
}
