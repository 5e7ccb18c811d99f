package kafkacoop;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** For tests: base64 records one a line on stdin; per record one JSON line with parse and refusal. */
public final class PhaseMarkersMain {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
    String line;
    while ((line = in.readLine()) != null) {
      byte[] raw = line.equals("-") ? null : Base64.getDecoder().decode(line);
      String[] why = new String[1];
      PhaseMarkers.Marker m = PhaseMarkers.parse(raw, why);
      String parse = m == null ? quote(why[0])
          : "{\"ts_ms\":" + m.tsMs() + ",\"group\":" + quote(m.group()) + ",\"migration\":"
              + quote(m.migration()) + ",\"phase\":" + m.phase() + ",\"phases\":" + m.phases() + "}";
      out.write("{\"parse\":" + parse + ",\"refusal\":" + quote(PhaseMarkers.refusal("some reason", raw)) + "}\n");
    }
    out.flush();
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }
}
