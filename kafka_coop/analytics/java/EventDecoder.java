package kafkacoop;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * One RebalanceEvent JSON line -> one row, for `kafka-coop report --engine spark`.
 *
 * <p>The Spark engine's only JVM code: a strict decoder with the rules pydantic applies to
 * `kafka_coop.events.RebalanceEvent` in strict JSON mode (the Python engine's reader), so both engines
 * refuse the same lines: required and unknown keys, JSON types (no number where a string belongs, no
 * float where an int belongs), the enums, `[topic, partition]` pairs, duplicate keys (the last wins),
 * int64 and finite-callback bounds, lone surrogates. Spark's own JSON reader cannot be made that
 * strict, and its `from_json` plus checks cost ~10x more per line than this single streaming pass.
 *
 * <p>Output (`reason` null for an event): reason, group, member (instance_id, else client_id@process,
 * else client_id or member_id: `_intervals.member_name`), member_id, ts, seq, kind (index into KINDS), protocol (index into PROTOCOLS), the delta as
 * topic (its first pair's topic, null when empty), topics (every pair's topic, only when the pairs name
 * more than one topic, else empty: not null, Spark's Arrow writer takes quadratic time over runs of
 * null lists) and parts (every pair's partition, little-endian int64s), n_owned,
 * cb_us (callback_ms as whole microseconds, half-up). A blank line gives reason "" (skipped, as the
 * Python reader skips it).
 *
 * <p>The delta is packed because lists were what cost most downstream: Spark converts, shuffles and
 * hands to Arrow a list element by element, a binary value in one copy, and a delta names one topic
 * almost always.
 */
public final class EventDecoder implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;
  private static final JsonFactory FACTORY =
      JsonFactory.builder().enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS).build();

  static final String[] KINDS = {
    "assigned", "revoked", "lost", "started", "closed", "warning", "reconfigured"
  };
  static final String[] PROTOCOLS = {"eager", "cooperative", "consumer"};
  // model order; required unless it has a default
  static final String[] FIELDS = {
    "v", "ts_ms", "seq", "group", "member_id", "instance_id", "client_id", "protocol", "kind",
    "partitions", "owned", "callback_ms", "committed", "error", "commit_ms", "process"
  };
  static final boolean[] REQUIRED = {
    false, true, true, true, true, true, true, true, true, true, true, true, false, false, false, false
  };
  static final double MAX_CALLBACK_MS = 1e12;
  private static final VarHandle LITTLE_ENDIAN_LONG =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  static final Row BLANK =
      RowFactory.create("", null, null, null, null, null, null, null, null, null, null, null, null);

  /** Per-line state: each field's last value (duplicate keys: the last wins) or its problem. */
  private static final class Line {
    final boolean[] seen = new boolean[FIELDS.length];
    final String[] problem = new String[FIELDS.length];
    final boolean checkSurrogates;
    String extra;
    long ts;
    long seq;
    String group;
    String memberId;
    String instanceId;
    String clientId;
    String process;
    int kind;
    int protocol;
    Delta delta;
    int owned;
    double callbackMs;

    Line(boolean checkSurrogates) {
      this.checkSurrogates = checkSurrogates;
    }
  }

  /**
   * A line's UTF-8 bytes (a text line cast to binary, or a Kafka record's value). An ASCII line is
   * parsed from its bytes: the same characters as its text, without decoding it into a String first;
   * any other line is decoded as Spark decodes text (malformed bytes become U+FFFD, as the Python
   * reader's errors="replace" does) and parsed as that text.
   */
  @Override
  public Row call(byte[] raw) {
    if (raw == null) {
      return malformed("invalid JSON");  // a Kafka record without a value
    }
    Row event = Fast.decode(raw);
    return event != null ? event : general(raw);
  }

  /** The general path alone (Jackson): the decoder the fast path must agree with, for tests. */
  public static final class General implements UDF1<byte[], Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(byte[] raw) {
      return raw == null ? malformed("invalid JSON") : general(raw);
    }
  }

  /** The fast path alone: null for every line it leaves to the general path, for tests. */
  public static final class FastOnly implements UDF1<byte[], Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(byte[] raw) {
      return raw == null ? null : Fast.decode(raw);
    }
  }

  static Row general(byte[] raw) {
    boolean blank = true;
    boolean escapes = false;
    for (int i = 0; i < raw.length; i++) {
      byte b = raw[i];
      if (b < 0) {
        return decode(new String(raw, StandardCharsets.UTF_8));
      }
      if (blank && !Character.isWhitespace((char) b)) {  // Python's whitespace, for ASCII
        blank = false;
      }
      if (b == 'u' && i > 0 && raw[i - 1] == '\\') {
        escapes = true;
      }
    }
    if (blank) {
      return BLANK;
    }
    try (JsonParser p = FACTORY.createParser(raw)) {
      return decode(p, new Line(escapes));
    } catch (IOException e) {
      return malformed("invalid JSON");
    }
  }

  /** One line of text. */
  static Row decode(String text) {
    if (isBlank(text)) {
      return BLANK;
    }
    try (JsonParser p = FACTORY.createParser(text)) {
      return decode(p, new Line(text.indexOf("\\u") >= 0));  // only escapes can make a lone surrogate
    } catch (IOException e) {
      return malformed("invalid JSON");
    }
  }

  private static Row decode(JsonParser p, Line line) {
    try {
      JsonToken first = p.nextToken();
      if (first != JsonToken.START_OBJECT) {
        p.skipChildren();
        return p.nextToken() == null ? malformed("line: Input should be an object") : malformed("invalid JSON");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        if (line.checkSurrogates && loneSurrogate(name)) {
          return malformed("invalid JSON");
        }
        p.nextToken();
        int field = indexOf(name);
        if (field < 0) {
          if (line.extra == null) {
            line.extra = name;
          }
          p.skipChildren();
        } else {
          line.seen[field] = true;
          line.problem[field] = read(field, p, line);
        }
      }
      if (p.nextToken() != null) {
        return malformed("invalid JSON");
      }
    } catch (IOException e) {  // JsonProcessingException: syntax, lone surrogates, numbers out of range
      return malformed("invalid JSON");
    }
    for (int f = 0; f < FIELDS.length; f++) {
      if (line.problem[f] != null) {
        return malformed(line.problem[f]);
      }
      if (REQUIRED[f] && !line.seen[f]) {
        return malformed(FIELDS[f] + ": Field required");
      }
    }
    if (line.extra != null) {
      return malformed(line.extra + ": Extra inputs are not permitted");
    }
    return event(line);
  }

  /** A valid line's row (both paths). */
  private static Row event(Line line) {
    String member;
    if (nonEmpty(line.instanceId)) {
      member = line.instanceId;
    } else if (nonEmpty(line.process)) {
      member = nonEmpty(line.clientId) ? line.clientId + "@" + line.process : line.process;
    } else {
      member = nonEmpty(line.clientId) ? line.clientId : line.memberId;
    }
    long callbackUs = (long) Math.floor(line.callbackMs * 1000 + 0.5);
    Delta delta = line.delta;
    return RowFactory.create(
        null, line.group, member, line.memberId, line.ts, line.seq, (byte) line.kind, (byte) line.protocol,
        delta.first, delta.topics, delta.packed(), line.owned, callbackUs);
  }

  /** Reads one field's value (consuming all of it) into `line`; returns its problem or null. */
  private static String read(int field, JsonParser p, Line line) throws IOException {
    String name = FIELDS[field];
    JsonToken t = p.currentToken();
    switch (name) {
      case "v":
        boolean one =
            t == JsonToken.VALUE_TRUE
                || (t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER
                    && p.getLongValue() == 1)
                || (t == JsonToken.VALUE_NUMBER_FLOAT && p.getDoubleValue() == 1.0);
        p.skipChildren();
        return one ? null : "v: Input should be 1";
      case "ts_ms":
      case "seq":
        if (!isInt64(p, t)) {
          p.skipChildren();
          return name + ": Input should be a valid integer";
        }
        if (name.equals("ts_ms")) {
          line.ts = p.getLongValue();
        } else {
          line.seq = p.getLongValue();
        }
        return null;
      case "group":
      case "member_id":
      case "client_id":
      case "instance_id":
      case "error":
      case "process":
        if (t == JsonToken.VALUE_NULL && !name.equals("group") && !name.equals("member_id")
            && !name.equals("client_id")) {
          if (name.equals("instance_id")) {
            line.instanceId = null;
          } else if (name.equals("process")) {
            line.process = null;
          }
          return null;
        }
        if (t != JsonToken.VALUE_STRING) {
          p.skipChildren();
          return name + ": Input should be a valid string";
        }
        String value = p.getText();
        if (line.checkSurrogates && loneSurrogate(value)) {
          throw new IOException("lone surrogate");
        }
        switch (name) {
          case "group": line.group = value; break;
          case "member_id": line.memberId = value; break;
          case "client_id": line.clientId = value; break;
          case "instance_id": line.instanceId = value; break;
          case "process": line.process = value; break;
          default: break;
        }
        return null;
      case "protocol":
      case "kind":
        String[] allowed = name.equals("kind") ? KINDS : PROTOCOLS;
        int code = t == JsonToken.VALUE_STRING ? indexIn(allowed, p.getText()) : -1;
        p.skipChildren();
        if (code < 0) {
          return name + ": Input should be " + choices(allowed);
        }
        if (name.equals("kind")) {
          line.kind = code;
        } else {
          line.protocol = code;
        }
        return null;
      case "callback_ms":
      case "commit_ms":
        if (t == JsonToken.VALUE_NULL && name.equals("commit_ms")) {
          return null;
        }
        if (t != JsonToken.VALUE_NUMBER_INT && t != JsonToken.VALUE_NUMBER_FLOAT) {
          p.skipChildren();
          return name + ": Input should be a valid number";
        }
        double ms = p.getDoubleValue();
        if (!(ms >= 0 && ms <= MAX_CALLBACK_MS)) {  // also NaN
          return name + ": Input should be a finite number between 0 and 1e12";
        }
        if (name.equals("callback_ms")) {
          line.callbackMs = ms;
        }
        return null;
      case "partitions":
      case "owned":
      case "committed":
        if (t == JsonToken.VALUE_NULL && name.equals("committed")) {
          return null;
        }
        Delta delta = name.equals("partitions") ? new Delta() : null;
        int[] count = new int[1];
        String problem = pairs(p, t, name, name.equals("committed") ? 3 : 2, delta, count, line);
        if (problem == null) {
          if (delta != null) {
            line.delta = delta;
          } else if (name.equals("owned")) {
            line.owned = count[0];
          }
        }
        return problem;
      default:
        throw new IllegalStateException(name);
    }
  }

  /**
   * An array of `[topic, int, ...]` tuples of exactly `width` items, the pairs kept into `delta` when
   * given; consumes the whole value. Problem texts are built only for a problem (this is the hot loop).
   */
  private static String pairs(
      JsonParser p, JsonToken t, String name, int width, Delta delta, int[] count, Line line)
      throws IOException {
    if (t != JsonToken.START_ARRAY) {
      p.skipChildren();
      return name + ": Input should be a valid array";
    }
    String problem = null;
    int index = 0;
    JsonToken item;
    while ((item = p.nextToken()) != JsonToken.END_ARRAY) {
      if (item != JsonToken.START_ARRAY) {
        p.skipChildren();
        problem = problem != null ? problem : at(name, index) + ": Input should be a valid array";
      } else {
        int k = 0;
        JsonToken e;
        while ((e = p.nextToken()) != JsonToken.END_ARRAY) {
          if (problem == null && k < width) {
            if (k == 0) {
              if (e != JsonToken.VALUE_STRING) {
                problem = at(name, index) + ".0: Input should be a valid string";
              } else if (delta != null || line.checkSurrogates) {
                String topic = p.getText();
                if (line.checkSurrogates && loneSurrogate(topic)) {
                  throw new IOException("lone surrogate");
                }
                if (delta != null) {
                  delta.topic(topic);
                }
              }
            } else if (!isInt64(p, e)) {
              problem = at(name, index) + "." + k + ": Input should be a valid integer";
            } else if (k == 1 && delta != null) {
              delta.partition(p.getLongValue());
            }
          }
          p.skipChildren();
          k++;
        }
        if (problem == null && k != width) {
          problem = k < width
              ? at(name, index) + "." + k + ": Field required"
              : at(name, index) + ": Tuple should have at most " + width + " items after validation, not " + k;
        }
      }
      index++;
    }
    count[0] = index;
    return problem;
  }

  private static String at(String name, int index) {
    return name + "." + index;
  }

  /**
   * The fast path: a line in the shape kafka-coop's own writers produce, decoded in one pass over its
   * bytes without Jackson, which was half of the decoder's time (docs/benchmarks.md). It takes only
   * lines it can prove valid: ASCII, every key known and given once, strings without escapes or
   * control characters, integers of at most 18 digits without a sign, plain decimals (no exponent, at
   * most 15 significant digits, so `m / 10^k` is the correctly rounded double Jackson's parse gives),
   * JSON whitespace between tokens. Anything else, valid or not, returns null and takes the general
   * path, so this path only has to agree with it on the lines it takes (held to it line by line by the
   * integration tests, over the writers' lines and mutations of them).
   */
  static final class Fast {
    private static final byte[][] KEYS = new byte[FIELDS.length][];
    private static final byte[][] QUOTED_KEYS = new byte[FIELDS.length][];
    private static final byte[][] KIND_BYTES = new byte[KINDS.length][];
    private static final byte[][] PROTOCOL_BYTES = new byte[PROTOCOLS.length][];
    private static final double[] POW10 = new double[23];
    private static final long EXACT = 1_000_000_000_000_000L;  // 1e15 < 2^53: every mantissa below is exact
    private static final int REQUIRED_MASK;

    static {
      int mask = 0;
      for (int f = 0; f < FIELDS.length; f++) {
        KEYS[f] = FIELDS[f].getBytes(StandardCharsets.US_ASCII);
        QUOTED_KEYS[f] = ('"' + FIELDS[f] + '"').getBytes(StandardCharsets.US_ASCII);
        mask |= REQUIRED[f] ? 1 << f : 0;
      }
      REQUIRED_MASK = mask;
      for (int k = 0; k < KINDS.length; k++) {
        KIND_BYTES[k] = KINDS[k].getBytes(StandardCharsets.US_ASCII);
      }
      for (int k = 0; k < PROTOCOLS.length; k++) {
        PROTOCOL_BYTES[k] = PROTOCOLS[k].getBytes(StandardCharsets.US_ASCII);
      }
      double p = 1;
      for (int k = 0; k < POW10.length; k++) {
        POW10[k] = p;
        p *= 10;  // exact up to 1e22
      }
    }

    private final byte[] b;
    private final int n;
    private int i;
    private int start;  // the last string's first byte
    private int length;  // the last string's length, -1 when it was not a plain string
    private long number;  // the last integer
    private double decimal;  // the last decimal
    private final Line line = new Line(false);

    private Fast(byte[] b) {
      this.b = b;
      this.n = b.length;
    }

    static Row decode(byte[] raw) {
      return new Fast(raw).line();
    }

    private Row line() {
      if (n < 2 || b[0] != '{' || b[n - 1] != '}') {
        return null;
      }
      i = 1;
      int seen = 0;
      int next = 0;  // the key expected next, in the writers' order
      while (true) {
        space();
        int field = key(next);
        if (field < 0 || (seen & (1 << field)) != 0) {
          return null;
        }
        seen |= 1 << field;
        next = field + 1;
        space();
        if (!value(field)) {
          return null;
        }
        space();
        if (i >= n) {
          return null;
        }
        byte c = b[i++];
        if (c == '}') {
          break;
        }
        if (c != ',') {
          return null;
        }
      }
      if (i != n || (seen & REQUIRED_MASK) != REQUIRED_MASK) {
        return null;
      }
      return event(line);
    }

    private void space() {
      while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
        i++;
      }
    }

    private boolean expect(byte c) {
      if (i < n && b[i] == c) {
        i++;
        return true;
      }
      return false;
    }

    /** A key and its colon; the field's index or -1. The key expected next is tried in place first. */
    private int key(int next) {
      if (next < KEYS.length && at(QUOTED_KEYS[next])) {
        i += QUOTED_KEYS[next].length;
        space();
        return expect((byte) ':') ? next : -1;
      }
      if (!string()) {
        return -1;
      }
      int field = -1;
      for (int f = 0; f < KEYS.length && field < 0; f++) {
        field = same(KEYS[f]) ? f : -1;
      }
      space();
      return expect((byte) ':') ? field : -1;
    }

    /** The bytes at the cursor are these. */
    private boolean at(byte[] text) {
      if (i + text.length > n) {
        return false;
      }
      for (int k = 0; k < text.length; k++) {
        if (b[i + k] != text[k]) {
          return false;
        }
      }
      return true;
    }

    /** The last string equals these bytes. */
    private boolean same(byte[] text) {
      if (text.length != length) {
        return false;
      }
      for (int k = 0; k < length; k++) {
        if (b[start + k] != text[k]) {
          return false;
        }
      }
      return true;
    }

    /** A string without escapes, control or non-ASCII characters; sets start/length. */
    private boolean string() {
      if (!expect((byte) '"')) {
        return false;
      }
      start = i;
      while (i < n) {
        byte c = b[i];
        if (c == '"') {
          length = i - start;
          i++;
          return true;
        }
        if (c < 0x20 || c == '\\') {  // also non-ASCII: bytes are signed
          return false;
        }
        i++;
      }
      return false;
    }

    private String text() {
      return new String(b, start, length, StandardCharsets.ISO_8859_1);  // ASCII: a plain copy
    }

    private boolean literalNull() {
      if (i + 4 <= n && b[i] == 'n' && b[i + 1] == 'u' && b[i + 2] == 'l' && b[i + 3] == 'l') {
        i += 4;
        return true;
      }
      return false;
    }

    /** An unsigned integer of 1-18 digits without a leading zero; sets number. */
    private boolean integer() {
      int from = i;
      long value = 0;
      while (i < n && b[i] >= '0' && b[i] <= '9') {
        value = value * 10 + (b[i] - '0');
        i++;
      }
      int digits = i - from;
      if (digits == 0 || digits > 18 || (digits > 1 && b[from] == '0')) {
        return false;
      }
      number = value;
      return true;
    }

    /** An unsigned `int` or `int.frac` of at most 15 significant digits; sets decimal. */
    private boolean decimal() {
      if (!integer()) {
        return false;
      }
      long mantissa = number;
      int scale = 0;
      if (i < n && b[i] == '.') {
        i++;
        int from = i;
        while (i < n && b[i] >= '0' && b[i] <= '9') {
          if (mantissa >= EXACT || i - from >= POW10.length - 1) {
            return false;
          }
          mantissa = mantissa * 10 + (b[i] - '0');
          i++;
        }
        scale = i - from;
        if (scale == 0) {
          return false;
        }
      }
      if (mantissa >= EXACT) {
        return false;
      }
      decimal = (double) mantissa / POW10[scale];
      return true;
    }

    private int oneOf(byte[][] names) {
      if (!string()) {
        return -1;
      }
      for (int k = 0; k < names.length; k++) {
        if (same(names[k])) {
          return k;
        }
      }
      return -1;
    }

    private boolean value(int field) {
      switch (field) {
        case 0:  // v
          return integer() && number == 1;
        case 1:
          if (!integer()) {
            return false;
          }
          line.ts = number;
          return true;
        case 2:
          if (!integer()) {
            return false;
          }
          line.seq = number;
          return true;
        case 3:
          if (!string()) {
            return false;
          }
          line.group = text();
          return true;
        case 4:
          if (!string()) {
            return false;
          }
          line.memberId = text();
          return true;
        case 5:
          if (literalNull()) {
            line.instanceId = null;
            return true;
          }
          if (!string()) {
            return false;
          }
          line.instanceId = text();
          return true;
        case 6:
          if (!string()) {
            return false;
          }
          line.clientId = text();
          return true;
        case 7:
          line.protocol = oneOf(PROTOCOL_BYTES);
          return line.protocol >= 0;
        case 8:
          line.kind = oneOf(KIND_BYTES);
          return line.kind >= 0;
        case 9:
          line.delta = new Delta();
          return tuples(2, line.delta) >= 0;
        case 10:
          line.owned = tuples(2, null);
          return line.owned >= 0;
        case 11:
          if (!decimal() || !(decimal <= MAX_CALLBACK_MS)) {
            return false;
          }
          line.callbackMs = decimal;
          return true;
        case 12:
          return literalNull() || tuples(3, null) >= 0;
        case 13:
          return literalNull() || string();
        case 14:
          return literalNull() || (decimal() && decimal <= MAX_CALLBACK_MS);
        case 15:
          if (literalNull()) {
            line.process = null;
            return true;
          }
          if (!string()) {
            return false;
          }
          line.process = text();
          return true;
        default:
          return false;
      }
    }

    /**
     * An array of `[topic, int, ...]` tuples of exactly `width` items, the integers unsigned; the
     * pairs kept into `delta` when given. The number of tuples, or -1.
     */
    private int tuples(int width, Delta delta) {
      if (!expect((byte) '[')) {
        return -1;
      }
      space();
      if (expect((byte) ']')) {
        return 0;
      }
      int count = 0;
      while (true) {
        if (!expect((byte) '[')) {
          return -1;
        }
        space();
        if (!string()) {
          return -1;
        }
        if (delta != null) {
          delta.topic(text());
        }
        for (int k = 1; k < width; k++) {
          space();
          if (!expect((byte) ',')) {
            return -1;
          }
          space();
          if (!integer()) {
            return -1;
          }
          if (k == 1 && delta != null) {
            delta.partition(number);
          }
        }
        space();
        if (!expect((byte) ']')) {
          return -1;
        }
        count++;
        space();
        if (expect((byte) ']')) {
          return count;
        }
        if (!expect((byte) ',')) {
          return -1;
        }
        space();
      }
    }
  }

  /** A delta's pairs as the decoder outputs them (class comment): first topic, all topics, packed parts. */
  private static final class Delta {
    String first;
    List<String> topics = List.of();  // filled once a second topic appears
    int n;
    long[] parts = new long[8];

    void topic(String topic) {
      if (first == null) {
        first = topic;
      } else if (topics.isEmpty() && !first.equals(topic)) {
        topics = new ArrayList<>(parts.length);
        for (int i = 0; i < n; i++) {
          topics.add(first);
        }
      }
      if (!topics.isEmpty()) {
        topics.add(topic);
      }
    }

    void partition(long partition) {
      if (n == parts.length) {
        parts = java.util.Arrays.copyOf(parts, 2 * n);
      }
      parts[n++] = partition;
    }

    byte[] packed() {
      byte[] out = new byte[8 * n];
      for (int k = 0; k < n; k++) {  // a LongBuffer view over the array cost 10x more per pair
        LITTLE_ENDIAN_LONG.set(out, 8 * k, parts[k]);
      }
      return out;
    }
  }

  private static boolean isInt64(JsonParser p, JsonToken t) throws IOException {
    return t == JsonToken.VALUE_NUMBER_INT && p.getNumberType() != JsonParser.NumberType.BIG_INTEGER;
  }

  /** FIELDS' index of a key (a hash switch: this runs for every key of every line). */
  private static int indexOf(String name) {
    switch (name) {
      case "v": return 0;
      case "ts_ms": return 1;
      case "seq": return 2;
      case "group": return 3;
      case "member_id": return 4;
      case "instance_id": return 5;
      case "client_id": return 6;
      case "protocol": return 7;
      case "kind": return 8;
      case "partitions": return 9;
      case "owned": return 10;
      case "callback_ms": return 11;
      case "committed": return 12;
      case "error": return 13;
      case "commit_ms": return 14;
      case "process": return 15;
      default: return -1;
    }
  }

  private static int indexIn(String[] names, String name) {
    for (int i = 0; i < names.length; i++) {
      if (names[i].equals(name)) {
        return i;
      }
    }
    return -1;
  }

  private static String choices(String[] names) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < names.length; i++) {
      out.append(i == 0 ? "" : i == names.length - 1 ? " or " : ", ").append('\'').append(names[i]).append('\'');
    }
    return out.toString();
  }

  private static boolean nonEmpty(String s) {
    return s != null && !s.isEmpty();
  }

  /** Python's `str.strip()` would leave nothing (its whitespace, not only JSON's). */
  static boolean isBlank(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!(Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\u0085')) {
        return false;
      }
    }
    return true;
  }

  static boolean loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          return true;
        }
      } else if (Character.isLowSurrogate(c)) {
        return true;
      }
    }
    return false;
  }

  private static Row malformed(String reason) {
    return RowFactory.create(reason, null, null, null, null, null, null, null, null, List.of(), null, null, null);
  }
}
