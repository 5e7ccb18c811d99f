package kafkacoop;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The live pipeline's step for one consumer group, in the JVM: `_stream.GroupStream` rule for rule,
 * with `_ledger.Ledger` inside. The Python class stays the reference the rules are written and
 * specified in; this one is what Spark runs, because the Python step held the pipeline near 30,000
 * events/s (docs/pipeline.md). Every unit test of the step runs against both, and a differential test
 * compares them on generated untidy streams. No Spark here: `LiveStep` adapts it to Spark.
 */
public final class GroupStep {
  /** The state format `dump` writes; the checkpoint records it (`_stream.JVM_STATE_FORMAT`). */
  public static final int STATE_FORMAT = 4;

  /** `_stream.StreamConfig`. */
  public record Config(
      long watermarkMs,
      long windowMs,
      long maxFutureMs,
      long idleMs,
      boolean live,
      String topic,
      String markersTopic)
      implements java.io.Serializable {}

  // --- the row shapes (`_stream.INPUT_FIELDS`, `OUTPUT_FIELDS`, `KIND_FIELDS`) ---------------------
  static final int IN_MARKER = 0, IN_REASON = 1, IN_MEMBER = 2, IN_MEMBER_ID = 3, IN_TS = 4;
  static final int IN_SEQ = 5, IN_KIND = 6, IN_PROTOCOL = 7, IN_TOPIC = 8, IN_TOPICS = 9;
  static final int IN_PARTS = 10, IN_N_OWNED = 11, IN_CB_US = 12, IN_PARTITION = 13;
  static final int IN_OFFSET = 14, IN_KTS = 15, IN_RAW = 16;

  public static final String[] OUTPUT_COLUMNS = {
    "kind", "group", "date", "ts", "version", "window_end", "phase", "member", "protocol", "events",
    "rebalances", "revoked", "lost", "revoked_partitions", "lost_partitions", "callback_us_total",
    "callback_us_max", "first_ts", "last_ts", "members_paused", "pause_ms", "pause_ms_p50",
    "pause_ms_p95", "pause_ms_max", "unavailable_ms", "unowned", "topic", "partition", "start_ms",
    "end_ms", "from_member", "to_member", "cause", "owner", "since", "handover_ms", "handover_from",
    "handover_to", "migration", "phase_n", "phases", "source", "offset", "reason", "raw", "seq",
    "event_ts"
  };
  private static final String[] WINDOW_FIELDS = {
    "ts", "window_end", "phase", "events", "rebalances", "revoked_partitions", "lost",
    "lost_partitions", "members_paused", "pause_ms", "pause_ms_p50", "pause_ms_p95", "pause_ms_max",
    "unavailable_ms", "unowned"
  };
  private static final String[] CALLBACK_FIELDS = {
    "ts", "window_end", "phase", "member", "protocol", "events", "rebalances", "revoked", "lost",
    "revoked_partitions", "lost_partitions", "callback_us_total", "callback_us_max", "first_ts",
    "last_ts"
  };
  private static final String[] INTERVAL_FIELDS = {
    "group", "topic", "partition", "start_ms", "end_ms", "from_member", "to_member", "cause"
  };
  private static final String[] PAUSE_FIELDS = {"group", "member", "start_ms", "end_ms", "cause"};
  private static final String[] PARTITION_FIELDS = {
    "ts", "version", "topic", "partition", "owner", "since", "from_member", "cause", "handover_ms",
    "handover_from", "handover_to"
  };
  private static final String[] MEMBER_FIELDS = {"ts", "version", "member", "since", "cause"};
  private static final String[] WINDOW_OPEN_FIELDS = append(WINDOW_FIELDS, "version", "last_ts");
  private static final String[] PHASE_FIELDS = {"ts", "phase", "migration", "phase_n", "phases"};
  private static final String[] DEADLETTER_FIELDS = {
    "ts", "source", "offset", "reason", "raw", "member", "seq", "event_ts"
  };
  private static final Map<String, Integer> COLUMN = new HashMap<>();

  static {
    for (int i = 0; i < OUTPUT_COLUMNS.length; i++) {
      COLUMN.put(OUTPUT_COLUMNS[i], i);
    }
  }

  private static final int[] WINDOW_AT = at(WINDOW_FIELDS), CALLBACK_AT = at(CALLBACK_FIELDS);
  private static final int[] INTERVAL_AT = at(INTERVAL_FIELDS), PAUSE_AT = at(PAUSE_FIELDS);
  private static final int[] PARTITION_AT = at(PARTITION_FIELDS), MEMBER_AT = at(MEMBER_FIELDS);
  private static final int[] WINDOW_OPEN_AT = at(WINDOW_OPEN_FIELDS), PHASE_AT = at(PHASE_FIELDS);
  private static final int[] DEADLETTER_AT = at(DEADLETTER_FIELDS);
  private static final int KIND_AT = COLUMN.get("kind"), GROUP_AT = COLUMN.get("group");
  private static final int TS_AT = COLUMN.get("ts"), END_AT = COLUMN.get("end_ms");

  static final String[] KIND_NAMES = {
    "assigned", "revoked", "lost", "started", "closed", "warning", "reconfigured"
  };
  static final String[] PROTOCOL_NAMES = {"eager", "cooperative", "consumer"};
  static final int ASSIGNED = 0, REVOKED = 1, LOST = 2, STARTED = 3, CLOSED = 4;
  static final String TOPICS_SEP = "\u0000";
  static final String LATE = "late", DUPLICATE = "duplicate", FUTURE = "future";
  static final String BEFORE_1970 = "before 1970"; // `_stream.BEFORE_1970`
  static final int MAX_RAW_KEPT = 64 * 1024;

  // --- state ---------------------------------------------------------------------------------------
  /** A topic partition of this group. */
  record Part(String topic, long number) {}

  /** A partition's gap: released at `since` by `from`, for `cause`. */
  record Gap(long since, String from, String cause) {}

  /** A member's pause since `since`, for `cause`. */
  record Began(long since, String cause) {}

  /** A partition's last hand-over: the interval's end, from, to. */
  record Handover(long end, String from, String to) {}

  /** The dedup key: member, member id, seq, ts. */
  record Seen(String member, String memberId, long seq, long ts) {}

  /** A window's callbacks key. */
  record CallbackKey(String phase, String member, int protocol) {}

  /**
   * An event or a marker waiting for the frontier, ordered as the reference orders its tuples: (ts,
   * 0 for a marker and 1 for an event, member, seq, member id), then a marker's migration, passed,
   * phases.
   */
  static final class Pending {
    final long ts;
    final boolean marker;
    final String member;
    final long seq;
    final String memberId;
    final int kind;
    final int protocol;
    final Part[] delta;
    final boolean owns;
    final long cbUs;
    final String migration;
    final long passed;
    final long phases;

    Pending(
        long ts,
        boolean marker,
        String member,
        long seq,
        String memberId,
        int kind,
        int protocol,
        Part[] delta,
        boolean owns,
        long cbUs,
        String migration,
        long passed,
        long phases) {
      this.ts = ts;
      this.marker = marker;
      this.member = member;
      this.seq = seq;
      this.memberId = memberId;
      this.kind = kind;
      this.protocol = protocol;
      this.delta = delta;
      this.owns = owns;
      this.cbUs = cbUs;
      this.migration = migration;
      this.passed = passed;
      this.phases = phases;
    }
  }

  static final Comparator<Pending> ORDER =
      (a, b) -> {
        int c = Long.compare(a.ts, b.ts);
        if (c != 0) return c;
        c = Boolean.compare(!a.marker, !b.marker);
        if (c != 0) return c;
        c = codePoints(a.member, b.member);
        if (c != 0) return c;
        c = Long.compare(a.seq, b.seq);
        if (c != 0) return c;
        c = codePoints(a.memberId, b.memberId);
        if (c != 0 || !a.marker) return c;
        c = codePoints(a.migration, b.migration);
        if (c != 0) return c;
        c = Long.compare(a.passed, b.passed);
        return c != 0 ? c : Long.compare(a.phases, b.phases);
      };

  /** Figures of one window not yet emitted (`_stream._Window`). */
  static final class Window {
    final LinkedHashMap<String, Long> paused = new LinkedHashMap<>();
    long unavailableMs;
    // -> events, rebalances, revoked, lost, revoked_p, lost_p, cb_sum, cb_max, first_ts, last_ts
    final LinkedHashMap<CallbackKey, long[]> callbacks = new LinkedHashMap<>();
  }

  private final String group;
  private final Config config;
  private Long frontier;
  private Long maxTs;
  private Long arrivedMs;
  // per source partition (events topic: its number; markers topic: -1 - its number): latest, at
  private final LinkedHashMap<Integer, long[]> sources = new LinkedHashMap<>();
  // the ledger
  private final LinkedHashMap<Part, String> owner = new LinkedHashMap<>();
  private final LinkedHashMap<Part, Gap> released = new LinkedHashMap<>();
  private final LinkedHashMap<String, Long> lastSeen = new LinkedHashMap<>();
  private final LinkedHashMap<String, Began> paused = new LinkedHashMap<>();
  private final ArrayList<Pending> pending = new ArrayList<>();
  private LinkedHashSet<Seen> seen = new LinkedHashSet<>();
  private final TreeMap<Long, Window> windows = new TreeMap<>();
  private Long nextWindow;
  private final LinkedHashMap<Part, Handover> handover = new LinkedHashMap<>();
  private String phase;
  private long version;
  // this step's output, and what it touched
  private List<Object[]> out = new ArrayList<>();
  private List<Object[]> outWindows = new ArrayList<>();
  private Set<Part> dirtyParts = new HashSet<>();
  private Set<String> dirtyMembers = new HashSet<>();

  public GroupStep(String group, Config config) {
    this.group = group;
    this.config = config;
  }

  // --- persistence ---------------------------------------------------------------------------------
  /** The state as bytes (`load` reads them back). */
  public byte[] dump() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream o = new StateOut(bytes)) {
      o.writeInt(STATE_FORMAT);
      writeString(o, group);
      writeLong(o, frontier);
      writeLong(o, maxTs);
      writeLong(o, arrivedMs);
      o.writeInt(sources.size());
      for (Map.Entry<Integer, long[]> e : sources.entrySet()) {
        o.writeInt(e.getKey());
        o.writeLong(e.getValue()[0]);
        o.writeLong(e.getValue()[1]);
      }
      o.writeInt(owner.size());
      for (Map.Entry<Part, String> e : owner.entrySet()) {
        writePart(o, e.getKey());
        writeString(o, e.getValue());
      }
      o.writeInt(released.size());
      for (Map.Entry<Part, Gap> e : released.entrySet()) {
        writePart(o, e.getKey());
        o.writeLong(e.getValue().since());
        writeString(o, e.getValue().from());
        writeString(o, e.getValue().cause());
      }
      o.writeInt(lastSeen.size());
      for (Map.Entry<String, Long> e : lastSeen.entrySet()) {
        writeString(o, e.getKey());
        o.writeLong(e.getValue());
      }
      o.writeInt(paused.size());
      for (Map.Entry<String, Began> e : paused.entrySet()) {
        writeString(o, e.getKey());
        o.writeLong(e.getValue().since());
        writeString(o, e.getValue().cause());
      }
      o.writeInt(pending.size());
      for (Pending p : pending) {
        o.writeLong(p.ts);
        o.writeBoolean(p.marker);
        if (p.marker) {
          writeString(o, p.migration);
          o.writeLong(p.passed);
          o.writeLong(p.phases);
        } else {
          writeString(o, p.member);
          o.writeLong(p.seq);
          writeString(o, p.memberId);
          o.writeByte(p.kind);
          o.writeByte(p.protocol);
          o.writeInt(p.delta.length);
          for (Part part : p.delta) {
            writePart(o, part);
          }
          o.writeBoolean(p.owns);
          o.writeLong(p.cbUs);
        }
      }
      o.writeInt(seen.size());
      for (Seen s : seen) {
        writeString(o, s.member());
        writeString(o, s.memberId());
        o.writeLong(s.seq());
        o.writeLong(s.ts());
      }
      o.writeInt(windows.size());
      for (Map.Entry<Long, Window> e : windows.entrySet()) {
        o.writeLong(e.getKey());
        Window w = e.getValue();
        o.writeInt(w.paused.size());
        for (Map.Entry<String, Long> p : w.paused.entrySet()) {
          writeString(o, p.getKey());
          o.writeLong(p.getValue());
        }
        o.writeLong(w.unavailableMs);
        o.writeInt(w.callbacks.size());
        for (Map.Entry<CallbackKey, long[]> c : w.callbacks.entrySet()) {
          writeString(o, c.getKey().phase());
          writeString(o, c.getKey().member());
          o.writeByte(c.getKey().protocol());
          for (long v : c.getValue()) {
            o.writeLong(v);
          }
        }
      }
      writeLong(o, nextWindow);
      o.writeInt(handover.size());
      for (Map.Entry<Part, Handover> e : handover.entrySet()) {
        writePart(o, e.getKey());
        o.writeLong(e.getValue().end());
        writeString(o, e.getValue().from());
        writeString(o, e.getValue().to());
      }
      writeString(o, phase);
      o.writeLong(version);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** The state `dump` wrote; IllegalArgumentException if it is not this format. */
  public static GroupStep load(byte[] blob, Config config) {
    try (DataInputStream in = new StateIn(blob)) {
      int format = in.readInt();
      if (format != STATE_FORMAT) {
        throw new IllegalArgumentException(
            "group state format " + format + " is not " + STATE_FORMAT);
      }
      GroupStep s = new GroupStep(readString(in), config);
      s.frontier = readLong(in);
      s.maxTs = readLong(in);
      s.arrivedMs = readLong(in);
      for (int n = in.readInt(); n > 0; n--) {
        s.sources.put(in.readInt(), new long[] {in.readLong(), in.readLong()});
      }
      for (int n = in.readInt(); n > 0; n--) {
        s.owner.put(readPart(in), readString(in));
      }
      for (int n = in.readInt(); n > 0; n--) {
        s.released.put(readPart(in), new Gap(in.readLong(), readString(in), readString(in)));
      }
      for (int n = in.readInt(); n > 0; n--) {
        s.lastSeen.put(readString(in), in.readLong());
      }
      for (int n = in.readInt(); n > 0; n--) {
        s.paused.put(readString(in), new Began(in.readLong(), readString(in)));
      }
      for (int n = in.readInt(); n > 0; n--) {
        long ts = in.readLong();
        if (in.readBoolean()) {
          s.pending.add(
              new Pending(
                  ts, true, "", 0, "", 0, 0, null, false, 0, readString(in), in.readLong(),
                  in.readLong()));
        } else {
          String member = readString(in);
          long seq = in.readLong();
          String memberId = readString(in);
          int kind = in.readByte();
          int protocol = in.readByte();
          Part[] delta = new Part[in.readInt()];
          for (int i = 0; i < delta.length; i++) {
            delta[i] = readPart(in);
          }
          s.pending.add(
              new Pending(
                  ts, false, member, seq, memberId, kind, protocol, delta, in.readBoolean(),
                  in.readLong(), null, 0, 0));
        }
      }
      for (int n = in.readInt(); n > 0; n--) {
        s.seen.add(new Seen(readString(in), readString(in), in.readLong(), in.readLong()));
      }
      for (int n = in.readInt(); n > 0; n--) {
        long start = in.readLong();
        Window w = new Window();
        for (int m = in.readInt(); m > 0; m--) {
          w.paused.put(readString(in), in.readLong());
        }
        w.unavailableMs = in.readLong();
        for (int m = in.readInt(); m > 0; m--) {
          CallbackKey key = new CallbackKey(readString(in), readString(in), in.readByte());
          long[] acc = new long[10];
          for (int i = 0; i < acc.length; i++) {
            acc[i] = in.readLong();
          }
          w.callbacks.put(key, acc);
        }
        s.windows.put(start, w);
      }
      s.nextWindow = readLong(in);
      for (int n = in.readInt(); n > 0; n--) {
        s.handover.put(readPart(in), new Handover(in.readLong(), readString(in), readString(in)));
      }
      s.phase = readString(in);
      s.version = in.readLong();
      return s;
    } catch (IOException | IndexOutOfBoundsException e) {
      throw new IllegalArgumentException("group state is truncated or corrupt: " + e, e);
    }
  }

  // --- the step ------------------------------------------------------------------------------------
  /**
   * One micro-batch: `rows` in `_stream.INPUT_FIELDS` order (Boolean marker, String reason, String
   * member, String member_id, Long ts, Long seq, Byte kind, Byte protocol, String topic, String topics,
   * byte[] parts, Integer n_owned, Long cb_us, Integer partition, Long offset, Long kts, byte[] raw);
   * returns output rows in `_stream.OUTPUT_FIELDS` order (47 values: String, Long or byte[]; `date`
   * null, the shell adds it).
   */
  public List<Object[]> advance(List<Object[]> rows, long batchTimeMs) {
    out = new ArrayList<>();
    outWindows = new ArrayList<>();
    Long clockBefore = maxTs;
    take(rows, batchTimeMs);
    boolean changed = !Objects.equals(maxTs, clockBefore);
    Long reached = clock(batchTimeMs);
    if (reached != null && (frontier == null || reached > frontier)) {
      changed = true;
      applyUntil(reached);
      frontier = reached;
      long horizon = reached - config.watermarkMs();
      if (!seen.isEmpty()) {
        LinkedHashSet<Seen> kept = new LinkedHashSet<>();
        for (Seen s : seen) {
          if (s.ts() >= horizon) kept.add(s);
        }
        seen = kept;
      }
    }
    if (frontier != null) {
      closeWindows(frontier);
    }
    emitState();
    if (changed && config.live()) {
      emitOpen();
    }
    return out;
  }

  private Long clock(long batchTimeMs) {
    if (maxTs == null || arrivedMs == null) return null;
    long idle = config.idleMs();
    boolean any = false;
    long slowest = Long.MAX_VALUE;
    for (long[] source : sources.values()) {
      if (batchTimeMs - source[1] < idle) {
        any = true;
        slowest = Math.min(slowest, source[0]);
      }
    }
    long clock = any ? slowest : maxTs + batchTimeMs - arrivedMs;
    return clock - config.watermarkMs();
  }

  /** `GroupStream.next_wakeup_ms`: null when only new rows matter. */
  public Long nextWakeupMs(long after) {
    long due;
    if (!pending.isEmpty()) {
      long first = Long.MAX_VALUE;
      for (Pending p : pending) first = Math.min(first, p.ts);
      due = first + 1;
    } else if (nextWindow != null
        && (!windows.isEmpty() || !paused.isEmpty() || !released.isEmpty())) {
      due = nextWindow + config.windowMs();
    } else {
      return null;
    }
    if (maxTs == null || arrivedMs == null) return null;
    long idle = config.idleMs();
    long stepped = Math.max(arrivedMs, after); // a partition quiet by then needs no step
    long wake = Long.MAX_VALUE;
    for (long[] source : sources.values()) {
      if (source[1] + idle > stepped) wake = Math.min(wake, source[1] + idle);
    }
    long waited = Math.max(idle, due + config.watermarkMs() - maxTs);
    return Math.min(wake, arrivedMs + waited);
  }

  // --- taking rows ---------------------------------------------------------------------------------
  private void take(List<Object[]> rows, long now) {
    Long front = frontier;
    long future = now + config.maxFutureMs();
    for (Object[] row : rows) {
      if (Boolean.TRUE.equals(row[IN_MARKER])) {
        takeMarker(row, now);
        continue;
      }
      if (row[IN_REASON] != null) {
        dead(row, PhaseMarkers.refusal((String) row[IN_REASON], (byte[]) row[IN_RAW]), true);
        continue;
      }
      long t = ((Number) row[IN_TS]).longValue();
      String member = (String) row[IN_MEMBER];
      String memberId = (String) row[IN_MEMBER_ID];
      long seq = ((Number) row[IN_SEQ]).longValue();
      Seen key = new Seen(member, memberId, seq, t);
      if (seen.contains(key)) {
        dead(row, DUPLICATE, false);
        continue;
      }
      if (front != null && t < front) {
        dead(row, LATE, false);
        continue;
      }
      if (t > future) {
        dead(row, FUTURE, false);
        continue;
      }
      if (t < 0) {
        dead(row, BEFORE_1970, false);
        continue;
      }
      seen.add(key);
      arrived(((Number) row[IN_PARTITION]).intValue(), t, now);
      long[] numbers = unpackParts((byte[]) row[IN_PARTS]);
      String listed = (String) row[IN_TOPICS];
      Part[] delta = new Part[numbers.length];
      if (listed != null && !listed.isEmpty()) {
        String[] topics = listed.split(TOPICS_SEP, -1);
        if (topics.length != numbers.length) {
          throw new IllegalArgumentException("topics and partitions of an event differ in length");
        }
        for (int i = 0; i < numbers.length; i++) delta[i] = new Part(topics[i], numbers[i]);
      } else {
        String first = (String) row[IN_TOPIC];
        for (int i = 0; i < numbers.length; i++) delta[i] = new Part(first, numbers[i]);
      }
      boolean owns = ((Number) row[IN_N_OWNED]).intValue() > 0;
      pending.add(
          new Pending(
              t,
              false,
              member,
              seq,
              memberId,
              ((Number) row[IN_KIND]).intValue(),
              ((Number) row[IN_PROTOCOL]).intValue(),
              delta,
              owns,
              ((Number) row[IN_CB_US]).longValue(),
              null,
              0,
              0));
    }
  }

  static long[] unpackParts(byte[] packed) {
    if (packed == null) return new long[0];
    long[] values = new long[packed.length / 8];
    java.nio.ByteBuffer buffer =
        java.nio.ByteBuffer.wrap(packed).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < values.length; i++) values[i] = buffer.getLong(i * 8);
    return values;
  }

  private void arrived(int source, long ts, long now) {
    if (maxTs == null || ts > maxTs) maxTs = ts;
    arrivedMs = now;
    long[] known = sources.get(source);
    if (known == null) {
      sources.put(source, new long[] {ts, now});
    } else {
      known[0] = Math.max(known[0], ts);
      known[1] = now;
    }
  }

  private void takeMarker(Object[] row, long now) {
    byte[] raw = (byte[]) row[IN_RAW];
    String[] why = new String[1];
    PhaseMarkers.Marker found = PhaseMarkers.parse(raw != null ? raw : new byte[0], why);
    if (found == null) {
      dead(row, why[0], true);
      return;
    }
    if (frontier != null && found.tsMs() < frontier) {
      dead(row, LATE, true);
      return;
    }
    if (found.tsMs() > now + config.maxFutureMs()) {
      dead(row, FUTURE, true);
      return;
    }
    if (found.tsMs() < 0) {
      dead(row, BEFORE_1970, true);
      return;
    }
    arrived(-1 - ((Number) row[IN_PARTITION]).intValue(), found.tsMs(), now);
    pending.add(
        new Pending(
            found.tsMs(), true, "", 0, "", 0, 0, null, false, 0, found.migration(), found.phase(),
            found.phases()));
  }

  private void dead(Object[] row, String reason, boolean keepRaw) {
    Object kts = row[IN_KTS];
    byte[] value = keepRaw ? (byte[]) row[IN_RAW] : null;
    boolean marker = Boolean.TRUE.equals(row[IN_MARKER]);
    boolean decoded = row[IN_REASON] == null && !marker;
    String topic = marker ? config.markersTopic() : config.topic();
    emit(
        "deadletter",
        DEADLETTER_AT,
        kts != null ? ((Number) kts).longValue() : 0L,
        "kafka://" + topic + "/" + pyStr(row[IN_PARTITION]),
        ((Number) row[IN_OFFSET]).longValue(),
        reason,
        value != null && value.length > MAX_RAW_KEPT ? Arrays.copyOf(value, MAX_RAW_KEPT) : value,
        decoded ? row[IN_MEMBER] : null,
        decoded ? asLong(row[IN_SEQ]) : null,
        decoded ? asLong(row[IN_TS]) : null);
  }

  // --- applying events in order --------------------------------------------------------------------
  private void applyUntil(long until) {
    if (pending.isEmpty()) return;
    pending.sort(ORDER);
    int ready = 0;
    for (Pending item : pending) {
      if (item.ts >= until) break;
      ready++;
    }
    if (ready == 0) return;
    String g = group != null ? group : "";
    long windowMs = config.windowMs();
    if (nextWindow == null) {
      long first = pending.get(0).ts;
      nextWindow = first - Math.floorMod(first, windowMs);
    }
    long windowStart = -1;
    LinkedHashMap<CallbackKey, long[]> callbacks = null;
    for (int i = 0; i < ready; i++) {
      Pending item = pending.get(i);
      long t = item.ts;
      long start = t - Math.floorMod(t, windowMs);
      if (start != windowStart) {
        if (t >= nextWindow + windowMs) closeWindows(t);
        windowStart = start;
        callbacks = null;
      }
      if (item.marker) {
        phase = phaseLabel(item.migration, item.passed, item.phases);
        emit("phase", PHASE_AT, t, phase, item.migration, item.passed, item.phases);
        continue;
      }
      if (callbacks == null) callbacks = window(start).callbacks;
      applyEvent(g, item);
      CallbackKey key = new CallbackKey(phase, item.member, item.protocol);
      long[] acc = callbacks.get(key);
      if (acc == null) {
        acc = new long[] {0, 0, 0, 0, 0, 0, 0, 0, t, t};
        callbacks.put(key, acc);
      }
      acc[0]++;
      if (item.kind == ASSIGNED) {
        acc[1]++;
      } else if (item.kind == REVOKED) {
        acc[2]++;
        acc[4] += item.delta.length;
      } else if (item.kind == LOST) {
        acc[3]++;
        acc[5] += item.delta.length;
      }
      acc[6] += item.cbUs;
      acc[7] = Math.max(acc[7], item.cbUs);
      acc[9] = t;
    }
    pending.subList(0, ready).clear();
  }

  /** `_ledger.Ledger.apply` for this group, and what the reference's step does with its result. */
  private void applyEvent(String g, Pending e) {
    String member = e.member;
    long ts = e.ts;
    int kind = e.kind;
    for (Part part : e.delta) dirtyParts.add(part);
    if (kind == ASSIGNED) {
      for (Part part : e.delta) {
        Gap gap = released.remove(part);
        String previous = owner.get(part);
        if (gap == null && previous != null && !previous.equals(member)) {
          gap = new Gap(lastSeen.getOrDefault(previous, ts), previous, "vanished");
        }
        if (gap != null) {
          emit(
              "interval",
              INTERVAL_AT,
              g,
              part.topic(),
              part.number(),
              gap.since(),
              ts,
              gap.from(),
              member,
              gap.cause());
          handover.put(part, new Handover(ts, gap.from(), member));
          clip(gap.since(), ts, null);
        }
        owner.put(part, member);
      }
    } else if (kind == REVOKED || kind == LOST) {
      for (Part part : e.delta) {
        if (member.equals(owner.get(part))) {
          owner.remove(part);
          released.put(part, new Gap(ts, member, KIND_NAMES[kind]));
          dirtyParts.add(part);
        }
      }
    } else if (kind == CLOSED) {
      List<Part> mine = new ArrayList<>();
      for (Map.Entry<Part, String> o : owner.entrySet()) {
        if (o.getValue().equals(member)) mine.add(o.getKey());
      }
      for (Part part : mine) {
        owner.remove(part);
        released.put(part, new Gap(ts, member, "revoked"));
        dirtyParts.add(part);
      }
    }
    lastSeen.put(member, ts);
    if (kind == ASSIGNED) {
      if (e.owns) {
        Began began = paused.remove(member);
        if (began != null) {
          emit("pause", PAUSE_AT, g, member, began.since(), ts, began.cause());
          clip(began.since(), ts, member);
          dirtyMembers.add(member);
        }
      }
    } else if ((kind == STARTED || (!e.owns && (kind == REVOKED || kind == LOST)))
        && !paused.containsKey(member)) {
      paused.put(member, new Began(ts, KIND_NAMES[kind]));
      dirtyMembers.add(member);
    }
  }

  private Window window(long start) {
    Window w = windows.get(start);
    if (w == null) {
      w = new Window();
      windows.put(start, w);
    }
    return w;
  }

  /**
   * A closed interval (member null) or pause into the windows not emitted yet: the part before them
   * was counted as open when they were emitted.
   */
  private void clip(long since, long end, String member) {
    long windowMs = config.windowMs();
    long start = since > nextWindow ? since : nextWindow;
    while (start < end) {
      long windowStart = start - Math.floorMod(start, windowMs);
      long stop = Math.min(end, windowStart + windowMs);
      Window w = window(windowStart);
      if (member == null) {
        w.unavailableMs += stop - start;
      } else {
        w.paused.merge(member, stop - start, Long::sum);
      }
      start = stop;
    }
  }

  // --- windows and state rows ----------------------------------------------------------------------
  private void closeWindows(long until) {
    long windowMs = config.windowMs();
    while (nextWindow != null && nextWindow + windowMs <= until) {
      long start = nextWindow;
      Window w = windows.remove(start);
      if (w != null) {
        emitWindow(start, start + windowMs, w, null);
        nextWindow = start + windowMs;
        continue;
      }
      long quietUntil = windows.isEmpty() ? until : Math.min(windows.firstKey(), until);
      quietUntil = Math.min(quietUntil, until - Math.floorMod(until, windowMs));
      quietUntil = Math.max(quietUntil, start + windowMs);
      if (!paused.isEmpty() || !released.isEmpty()) {
        emitWindow(start, quietUntil, new Window(), null);
      }
      nextWindow = quietUntil;
    }
  }

  private void emitOpen() {
    if (maxTs == null
        || (pending.isEmpty() && windows.isEmpty() && paused.isEmpty() && released.isEmpty())) {
      return;
    }
    long upto = maxTs;
    GroupStep probe = load(dump(), config);
    probe.applyUntil(upto + 1);
    probe.closeWindows(upto);
    Long start = probe.nextWindow;
    if (start != null && start <= upto) {
      Window w = probe.windows.remove(start);
      if (w != null || !probe.paused.isEmpty() || !probe.released.isEmpty()) {
        probe.emitWindow(
            start, start + config.windowMs(), w != null ? w : new Window(), upto);
      }
    }
    for (Object[] figures : probe.outWindows) {
      version++;
      Object[] values = new Object[WINDOW_OPEN_AT.length];
      for (int i = 0; i < WINDOW_AT.length; i++) values[i] = figures[WINDOW_AT[i]];
      values[WINDOW_AT.length] = version;
      values[WINDOW_AT.length + 1] = upto;
      emit("window_open", WINDOW_OPEN_AT, values);
    }
  }

  private void emitWindow(long start, long end, Window w, Long openUntil) {
    LinkedHashMap<String, Long> pausedMs = new LinkedHashMap<>(w.paused);
    long upto = openUntil == null ? end : openUntil;
    for (Map.Entry<String, Began> p : paused.entrySet()) {
      pausedMs.merge(p.getKey(), Math.max(0, upto - Math.max(p.getValue().since(), start)), Long::sum);
    }
    long unavailable = w.unavailableMs;
    for (Gap gap : released.values()) {
      unavailable += Math.max(0, upto - Math.max(gap.since(), start));
    }
    long[] values = pausedMs.values().stream().mapToLong(Long::longValue).filter(v -> v > 0).toArray();
    Arrays.sort(values);
    long events = 0, rebalances = 0, revokedPartitions = 0, lost = 0, lostPartitions = 0;
    for (long[] acc : w.callbacks.values()) {
      events += acc[0];
      rebalances += acc[1];
      lost += acc[3];
      revokedPartitions += acc[4];
      lostPartitions += acc[5];
    }
    long sum = 0;
    for (long v : values) sum += v;
    Object[] row =
        emit(
            "window",
            WINDOW_AT,
            start,
            end,
            phase,
            events,
            rebalances,
            revokedPartitions,
            lost,
            lostPartitions,
            (long) values.length,
            sum,
            percentile(values, 50),
            percentile(values, 95),
            values.length > 0 ? values[values.length - 1] : 0L,
            unavailable,
            (long) released.size());
    outWindows.add(row);
    for (Map.Entry<CallbackKey, long[]> c : w.callbacks.entrySet()) {
      long[] acc = c.getValue();
      Object[] fields = new Object[CALLBACK_AT.length];
      fields[0] = start;
      fields[1] = end;
      fields[2] = c.getKey().phase();
      fields[3] = c.getKey().member();
      fields[4] = PROTOCOL_NAMES[c.getKey().protocol()];
      for (int i = 0; i < acc.length; i++) fields[5 + i] = acc[i];
      emit("callbacks", CALLBACK_AT, fields);
    }
  }

  /** `_stream.percentile`, nearest rank, with q as a whole percentage. */
  static long percentile(long[] sorted, int percent) {
    int n = sorted.length;
    if (n == 0) return 0;
    long rank = Math.max(1, ceilDiv((long) percent * n, 100));
    return sorted[(int) Math.min(rank, n) - 1];
  }

  private static long ceilDiv(long a, long b) {
    return -Math.floorDiv(-a, b);
  }

  private void emitState() {
    if (dirtyParts.isEmpty() && dirtyMembers.isEmpty()) return;
    long asOf = frontier != null ? frontier : 0L;
    List<Part> parts = new ArrayList<>(dirtyParts);
    parts.sort((a, b) -> {
      int c = codePoints(a.topic(), b.topic());
      return c != 0 ? c : Long.compare(a.number(), b.number());
    });
    for (Part part : parts) {
      version++;
      Gap gap = released.get(part);
      Handover last = handover.get(part);
      emit(
          "partition",
          PARTITION_AT,
          asOf,
          version,
          part.topic(),
          part.number(),
          owner.get(part),
          gap != null ? gap.since() : null,
          gap != null ? gap.from() : null,
          gap != null ? gap.cause() : null,
          last != null ? last.end() : null,
          last != null ? last.from() : null,
          last != null ? last.to() : null);
    }
    List<String> members = new ArrayList<>(dirtyMembers);
    members.sort(GroupStep::codePoints);
    for (String member : members) {
      version++;
      Began began = paused.get(member);
      emit(
          "member",
          MEMBER_AT,
          asOf,
          version,
          member,
          began != null ? began.since() : null,
          began != null ? began.cause() : null);
    }
    dirtyParts = new HashSet<>();
    dirtyMembers = new HashSet<>();
  }

  // --- output rows ---------------------------------------------------------------------------------
  private Object[] emit(String kind, int[] at, Object... values) {
    Object[] row = new Object[OUTPUT_COLUMNS.length];
    for (int i = 0; i < at.length; i++) row[at[i]] = values[i];
    row[KIND_AT] = kind;
    row[GROUP_AT] = group;
    if (at == INTERVAL_AT || at == PAUSE_AT) row[TS_AT] = row[END_AT];
    out.add(row);
    return row;
  }

  static String phaseLabel(String migration, long passed, long phases) {
    return passed >= phases ? migration + " done" : migration + " " + (passed + 1) + "/" + phases;
  }

  // --- helpers -------------------------------------------------------------------------------------
  /** Python's string order (by code point; Java's compareTo orders UTF-16 units). */
  static int codePoints(String a, String b) {
    if (a == null || b == null) return a == null ? (b == null ? 0 : -1) : 1;
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      char x = a.charAt(i), y = b.charAt(i);
      if (x != y) {
        return Character.isSurrogate(x) || Character.isSurrogate(y)
            ? Integer.compare(a.codePointAt(i), b.codePointAt(i))
            : Character.compare(x, y);
      }
    }
    return Integer.compare(a.length(), b.length());
  }

  private static String pyStr(Object value) {
    return value == null ? "None" : value.toString();
  }

  private static Long asLong(Object value) {
    return value == null ? null : ((Number) value).longValue();
  }

  private static String[] append(String[] fields, String... more) {
    String[] all = Arrays.copyOf(fields, fields.length + more.length);
    System.arraycopy(more, 0, all, fields.length, more.length);
    return all;
  }

  private static int[] at(String[] fields) {
    int[] at = new int[fields.length];
    for (int i = 0; i < fields.length; i++) at[i] = COLUMN.get(fields[i]);
    return at;
  }

  /** The state's writer: each string once, then by its number (members and topics repeat a lot). */
  private static final class StateOut extends DataOutputStream {
    final HashMap<String, Integer> known = new HashMap<>();

    StateOut(ByteArrayOutputStream bytes) {
      super(bytes);
    }
  }

  private static final class StateIn extends DataInputStream {
    final ArrayList<String> known = new ArrayList<>();

    StateIn(byte[] blob) {
      super(new ByteArrayInputStream(blob));
    }
  }

  /** -1: null; -2 - n: the n-th string written before; else a new string of that many UTF-8 bytes. */
  private static void writeString(DataOutputStream out, String s) throws IOException {
    StateOut o = (StateOut) out;
    if (s == null) {
      o.writeInt(-1);
      return;
    }
    Integer seen = o.known.get(s);
    if (seen != null) {
      o.writeInt(-2 - seen);
      return;
    }
    o.known.put(s, o.known.size());
    byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    o.writeInt(bytes.length);
    o.write(bytes);
  }

  private static String readString(DataInputStream input) throws IOException {
    StateIn in = (StateIn) input;
    int n = in.readInt();
    if (n == -1) return null;
    if (n < -1) return in.known.get(-2 - n);
    byte[] bytes = new byte[n];
    in.readFully(bytes);
    String s = new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    in.known.add(s);
    return s;
  }

  private static void writeLong(DataOutputStream o, Long v) throws IOException {
    o.writeBoolean(v != null);
    if (v != null) o.writeLong(v);
  }

  private static Long readLong(DataInputStream in) throws IOException {
    return in.readBoolean() ? in.readLong() : null;
  }

  private static void writePart(DataOutputStream o, Part p) throws IOException {
    writeString(o, p.topic());
    o.writeLong(p.number());
  }

  private static Part readPart(DataInputStream in) throws IOException {
    return new Part(readString(in), in.readLong());
  }

}
