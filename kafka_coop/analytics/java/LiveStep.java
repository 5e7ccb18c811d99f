package kafkacoop;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.StructType;

/**
 * `GroupStep` as Spark's stateful operator: one call per group and micro-batch, the group's state in
 * Spark's state store as `GroupStep.dump` bytes, a processing-time timeout to wake an idle group (what
 * `_pipeline.step` did for the Python step, through `applyInPandasWithState`).
 */
public final class LiveStep implements FlatMapGroupsWithStateFunction<String, Row, byte[], Row> {
  private static final long serialVersionUID = 1L;
  private final GroupStep.Config config;

  LiveStep(GroupStep.Config config) {
    this.config = config;
  }

  /**
   * The step over `input`, whose first column is `group` and the rest `_stream.INPUT_FIELDS` in order;
   * rows of `outputDdl` (`_stream.OUTPUT_FIELDS`, `date` null).
   */
  public static Dataset<Row> apply(
      Dataset<Row> input,
      String outputDdl,
      long watermarkMs,
      long windowMs,
      long maxFutureMs,
      long idleMs,
      boolean live,
      String topic,
      String markersTopic) {
    GroupStep.Config config =
        new GroupStep.Config(watermarkMs, windowMs, maxFutureMs, idleMs, live, topic, markersTopic);
    return input
        .groupByKey((MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING())
        .flatMapGroupsWithState(
            new LiveStep(config),
            OutputMode.Append(),
            Encoders.BINARY(),
            Encoders.row(StructType.fromDDL(outputDdl)),
            GroupStateTimeout.ProcessingTimeTimeout());
  }

  @Override
  public Iterator<Row> call(String group, Iterator<Row> rows, GroupState<byte[]> state) {
    long now = state.getCurrentProcessingTimeMs();
    GroupStep step =
        state.exists() ? GroupStep.load(state.get(), config) : new GroupStep(group, config);
    List<Object[]> input = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      Object[] values = new Object[row.length() - 1];
      for (int i = 0; i < values.length; i++) values[i] = row.get(i + 1);
      input.add(values);
    }
    List<Object[]> out = step.advance(input, now);
    if (group == null) { // the lane of records with no group: nothing to keep
      if (state.exists()) state.remove();
    } else {
      state.update(step.dump());
      Long wakeup = step.nextWakeupMs(now);
      if (wakeup != null) state.setTimeoutDuration(Math.max(1, wakeup - now));
    }
    List<Row> result = new ArrayList<>(out.size());
    for (Object[] values : out) result.add(RowFactory.create(values));
    return result.iterator();
  }
}
