package kafkacoop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Tests only: `GroupStep` served one JSON request a line on stdin, one reply a line on stdout, so the
 * Python unit specification of the step (tests/unit/analytics/test_stream.py) runs against it as it
 * runs against `_stream.GroupStream`.
 *
 * <p>Requests (Python's side: tests/unit/analytics/jvm_replay.py):
 *
 * <ul>
 *   <li>{"op": "fields", "input": [[name, type]...], "output": [[name, type]...]}: `_stream`'s
 *       INPUT_FIELDS and OUTPUT_FIELDS, sent first; every row in and out is checked against them.
 *   <li>{"op": "advance", "group", "state", "config", "now", "rows"}: load the state (base64; null: a
 *       new GroupStep), advance over `rows` (columns by name; binary as base64, byte/int as numbers),
 *       reply {"rows": [[47 values]], "state", "wakeup"}; as `_pipeline.step` does, the null group's
 *       lane keeps no state (state and wakeup null).
 *   <li>{"op": "wakeup", "state", "config", "after"}: the loaded state's nextWakeupMs(after), without
 *       advancing.
 * </ul>
 *
 * Any failure replies {"error": stack trace} and the next request is served as usual. What the step
 * prints goes to stderr, never into the replies.
 */
public final class StepReplay {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> CONFIG_KEYS =
      Set.of(
          "watermark_ms", "window_ms", "max_future_ms", "idle_ms", "live", "topic", "markers_topic");

  private String[][] input;
  private String[][] output;

  public static void main(String[] args) throws Exception {
    PrintStream replies = System.out;
    System.setOut(System.err);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
    Writer out =
        new BufferedWriter(new OutputStreamWriter(replies, StandardCharsets.UTF_8), 1 << 20);
    StepReplay replay = new StepReplay();
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      String reply;
      try {
        reply = JSON.writeValueAsString(replay.serve(JSON.readTree(line)));
      } catch (Throwable e) { // the test shows the JVM's stack trace, whatever was thrown
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        reply = JSON.writeValueAsString(JSON.createObjectNode().put("error", trace.toString()));
      }
      out.write(reply);
      out.write('\n');
      out.flush();
    }
  }

  private ObjectNode serve(JsonNode request) {
    String op = request.path("op").asText("advance");
    switch (op) {
      case "fields":
        input = fields(request.get("input"));
        output = fields(request.get("output"));
        return JSON.createObjectNode().put("ok", true);
      case "wakeup":
        {
          GroupStep step = GroupStep.load(blob(request.get("state")), config(request.get("config")));
          long after = request.get("after").longValue();
          return JSON.createObjectNode().set("wakeup", number(step.nextWakeupMs(after)));
        }
      case "advance":
        return advance(request);
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private ObjectNode advance(JsonNode request) {
    if (input == null) {
      throw new IllegalStateException("no fields request came first");
    }
    JsonNode groupNode = request.get("group");
    String group = groupNode == null || groupNode.isNull() ? null : groupNode.textValue();
    GroupStep.Config config = config(request.get("config"));
    byte[] state = blob(request.get("state"));
    GroupStep step = state == null ? new GroupStep(group, config) : GroupStep.load(state, config);
    List<Object[]> out = step.advance(rows(request.get("rows")), request.get("now").longValue());
    ObjectNode reply = JSON.createObjectNode();
    ArrayNode rows = reply.putArray("rows");
    for (int i = 0; i < out.size(); i++) {
      rows.add(outputRow(out.get(i), i));
    }
    if (group == null) {
      reply.putNull("state");
      reply.putNull("wakeup");
    } else {
      reply.put("state", step.dump());
      reply.set("wakeup", number(step.nextWakeupMs(request.get("now").longValue())));
    }
    return reply;
  }

  private static String[][] fields(JsonNode spec) {
    String[][] out = new String[spec.size()][];
    for (int i = 0; i < spec.size(); i++) {
      out[i] = new String[] {spec.get(i).get(0).textValue(), spec.get(i).get(1).textValue()};
    }
    return out;
  }

  private static GroupStep.Config config(JsonNode c) {
    Set<String> keys = new TreeSet<>();
    c.fieldNames().forEachRemaining(keys::add);
    if (!keys.equals(new TreeSet<>(CONFIG_KEYS))) {
      throw new IllegalArgumentException("StreamConfig fields " + keys + ", not " + CONFIG_KEYS);
    }
    return new GroupStep.Config(
        c.get("watermark_ms").longValue(),
        c.get("window_ms").longValue(),
        c.get("max_future_ms").longValue(),
        c.get("idle_ms").longValue(),
        c.get("live").booleanValue(),
        c.get("topic").textValue(),
        c.get("markers_topic").textValue());
  }

  private static byte[] blob(JsonNode node) {
    return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.textValue());
  }

  private static JsonNode number(Long value) {
    return value == null ? JSON.nullNode() : JSON.getNodeFactory().numberNode(value);
  }

  /** Columns by name into rows in INPUT_FIELDS order, with the Java types GroupStep takes. */
  private List<Object[]> rows(JsonNode columns) {
    Set<String> names = new TreeSet<>();
    columns.fieldNames().forEachRemaining(names::add);
    Set<String> expected = new TreeSet<>();
    for (String[] field : input) {
      expected.add(field[0]);
    }
    if (!names.equals(expected)) {
      throw new IllegalArgumentException("input columns " + names + ", not " + expected);
    }
    int n = columns.get(input[0][0]).size();
    JsonNode[] byField = new JsonNode[input.length];
    for (int j = 0; j < input.length; j++) {
      byField[j] = columns.get(input[j][0]);
      if (byField[j].size() != n) {
        throw new IllegalArgumentException("column " + input[j][0] + " has " + byField[j].size());
      }
    }
    List<Object[]> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Object[] row = new Object[input.length];
      for (int j = 0; j < input.length; j++) {
        row[j] = inputValue(byField[j].get(i), input[j]);
      }
      rows.add(row);
    }
    return rows;
  }

  private static Object inputValue(JsonNode v, String[] field) {
    if (v.isNull()) {
      return null;
    }
    String type = field[1];
    switch (type) {
      case "boolean":
        return check(v.isBoolean(), v, field, v.booleanValue());
      case "string":
        return check(v.isTextual(), v, field, v.textValue());
      case "long":
        return check(v.canConvertToLong() && v.isIntegralNumber(), v, field, v.longValue());
      case "int":
        return check(v.canConvertToInt() && v.isIntegralNumber(), v, field, v.intValue());
      case "byte":
        boolean fits = v.isIntegralNumber() && v.longValue() == (byte) v.longValue();
        return check(fits, v, field, (byte) v.longValue());
      case "binary":
        return check(v.isTextual(), v, field, v.isTextual() ? Base64.getDecoder().decode(v.textValue()) : null);
      default:
        throw new IllegalArgumentException("input field " + field[0] + " has unknown type " + type);
    }
  }

  private static Object check(boolean fits, JsonNode v, String[] field, Object value) {
    if (!fits) {
      throw new IllegalArgumentException(field[0] + " (" + field[1] + ") cannot be " + v);
    }
    return value;
  }

  /** One output row as JSON, each value checked to be what the Spark shell's schema takes. */
  private ArrayNode outputRow(Object[] row, int index) {
    if (row.length != output.length) {
      throw new IllegalStateException(
          "output row " + index + " has " + row.length + " values, not " + output.length);
    }
    ArrayNode out = JSON.createArrayNode();
    for (int j = 0; j < row.length; j++) {
      Object value = row[j];
      String name = output[j][0];
      String type = output[j][1];
      if (value == null) {
        out.addNull();
      } else if (name.equals("date")) {
        throw new IllegalStateException("output row " + index + ": date is not null (the shell adds it)");
      } else if (type.equals("string") && value instanceof String s) {
        out.add(s);
      } else if (type.equals("long") && value instanceof Long l) {
        out.add(l);
      } else if (type.equals("binary") && value instanceof byte[] b) {
        out.add(b);
      } else {
        throw new IllegalStateException(
            "output row " + index + " column " + name + " (" + type + ") is a "
                + value.getClass().getName() + ": " + value);
      }
    }
    return out;
  }

  private StepReplay() {}
}
