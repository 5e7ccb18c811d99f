package kafkacoop;

import java.util.List;

/**
 * The live pipeline's step for one consumer group, in the JVM: `_stream.GroupStream` (the reference)
 * rule for rule. SKELETON: being written.
 */
public final class GroupStep {
  /** `_stream.StreamConfig`. */
  public record Config(
      long watermarkMs,
      long windowMs,
      long maxFutureMs,
      long idleMs,
      boolean live,
      String topic,
      String markersTopic) {}

  public GroupStep(String group, Config config) {
    throw new UnsupportedOperationException();
  }

  /** The state `dump` wrote; IllegalArgumentException if it is not this format. */
  public static GroupStep load(byte[] blob, Config config) {
    throw new UnsupportedOperationException();
  }

  public byte[] dump() {
    throw new UnsupportedOperationException();
  }

  /**
   * One micro-batch: `rows` in `_stream.INPUT_FIELDS` order (Boolean marker, String reason, String
   * member, String member_id, Long ts, Long seq, Byte kind, Byte protocol, String topic, String topics,
   * byte[] parts, Integer n_owned, Long cb_us, Integer partition, Long offset, Long kts, byte[] raw);
   * returns output rows in `_stream.OUTPUT_FIELDS` order (47 values: String, Long or byte[]; `date`
   * null, the shell adds it).
   */
  public List<Object[]> advance(List<Object[]> rows, long batchTimeMs) {
    throw new UnsupportedOperationException();
  }

  /** `GroupStream.next_wakeup_ms`: null when only new rows matter. */
  public Long nextWakeupMs() {
    throw new UnsupportedOperationException();
  }
}
