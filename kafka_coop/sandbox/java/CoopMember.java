import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Java kafka-clients group member for kafka-coop's test bed: one or many members in one JVM, every
 * rebalance callback written as a RebalanceEvent JSON line (the schema in DESIGN.md), offsets committed
 * synchronously on revoke, a clean close on SIGTERM.
 *
 * Java's ConsumerCoordinator does not expose the rebalance protocol it picked, so this program computes
 * it with the coordinator's own rule: the highest protocol supported by every configured assignor.
 */
public final class CoopMember {
    private static final int EVENT_VERSION = 1;

    public static void main(String[] argv) throws Exception {
        Options opts = Options.parse(argv);
        Trace.open(opts.trace);
        Trace.mark("main");
        EventLog events = new EventLog(opts.events);
        RecordLog records = opts.records == null ? null : new RecordLog(opts.records);
        ManifestLog manifests = opts.manifests == null ? null : ManifestLog.open(opts.bootstrap, opts.manifests);
        AtomicBoolean running = new AtomicBoolean(true);
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < opts.members; i++) {
            members.add(new Member(opts, opts.firstIndex + i, events, records, manifests, running));
        }
        Trace.mark("constructed");
        CountDownLatch done = new CountDownLatch(members.size());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Trace.mark("sigterm");
            running.set(false);
            for (Member m : members) m.wakeup();
            try {
                done.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
            events.close();
            if (records != null) records.close();
            if (manifests != null) manifests.close();
            Trace.mark("hook_done");
            Trace.close();
        }, "coop-member-shutdown"));
        List<Thread> threads = new ArrayList<>();
        for (Member m : members) {
            Thread t = new Thread(() -> {
                try {
                    m.run();
                } catch (Throwable e) {
                    System.err.println("member " + m.clientId + " failed: " + e);
                    e.printStackTrace();
                } finally {
                    done.countDown();
                }
            }, "member-" + m.clientId);
            threads.add(t);
            t.start();
        }
        System.out.println("READY " + members.size());
        System.out.flush();
        for (Thread t : threads) t.join();
    }

    /** Command line: --key value pairs; --prop k=v repeatable for any consumer property. */
    static final class Options {
        String bootstrap;
        String group;
        List<String> topics = new ArrayList<>();
        List<String> assignors = new ArrayList<>(List.of("range"));
        String groupProtocol = "classic";
        String remoteAssignor;
        String instanceId;
        String clientId = "java-{i}";
        String events = "-";
        String records;
        int members = 1;
        int firstIndex = 0;
        long processMs = 0;
        String closeMode = "default";
        String commitMode = "interval"; // interval: commitAsync every 1 s; batch: commitSync after each batch
        String manifests;
        String trace; // bench only: a file of "mark wall_ms" lines (bench/restart_floor.py)
        Map<String, String> props = new LinkedHashMap<>();

        static Options parse(String[] argv) {
            Options o = new Options();
            for (int i = 0; i < argv.length; i += 2) {
                if (i + 1 >= argv.length) throw new IllegalArgumentException("missing value for " + argv[i]);
                String k = argv[i];
                String v = argv[i + 1];
                switch (k) {
                    case "--bootstrap": o.bootstrap = v; break;
                    case "--group": o.group = v; break;
                    case "--topics": o.topics = Arrays.asList(v.split(",")); break;
                    case "--assignors": o.assignors = Arrays.asList(v.split(",")); break;
                    case "--group-protocol": o.groupProtocol = v; break;
                    case "--remote-assignor": o.remoteAssignor = v; break;
                    case "--instance-id": o.instanceId = v; break;
                    case "--client-id": o.clientId = v; break;
                    case "--events": o.events = v; break;
                    case "--records": o.records = v; break;
                    case "--members": o.members = Integer.parseInt(v); break;
                    case "--first-index": o.firstIndex = Integer.parseInt(v); break;
                    case "--process-ms": o.processMs = Long.parseLong(v); break;
                    case "--close": o.closeMode = v; break;
                    case "--commit": {
                        if (!v.equals("interval") && !v.equals("batch")) {
                            throw new IllegalArgumentException("--commit expects interval or batch, got " + v);
                        }
                        o.commitMode = v;
                        break;
                    }
                    case "--manifests": o.manifests = v; break;
                    case "--trace": o.trace = v; break;
                    case "--prop": {
                        int eq = v.indexOf('=');
                        if (eq <= 0) throw new IllegalArgumentException("--prop expects key=value, got " + v);
                        o.props.put(v.substring(0, eq), v.substring(eq + 1));
                        break;
                    }
                    default: throw new IllegalArgumentException("unknown option " + k);
                }
            }
            if (o.bootstrap == null || o.group == null || o.topics.isEmpty()) {
                throw new IllegalArgumentException("--bootstrap, --group and --topics are required");
            }
            return o;
        }
    }

    /** kafka-clients' own version, from the properties file its jar ships (AppInfoParser, which reads
     *  it too, moved to an internal package in 4.4, so the member reads the file itself). */
    static String clientsVersion() {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (IOException e) {
            return "unknown";
        }
        return props.getProperty("version", "unknown").trim();
    }

    static String assignorClass(String name) {
        switch (name) {
            case "range": return RangeAssignor.class.getName();
            case "roundrobin": return RoundRobinAssignor.class.getName();
            case "sticky": return StickyAssignor.class.getName();
            case "cooperative-sticky": return CooperativeStickyAssignor.class.getName();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    static ConsumerPartitionAssignor assignorInstance(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    /** ConsumerCoordinator's rule: the highest-id protocol that every configured assignor supports. */
    static String classicProtocol(List<String> assignors) {
        Set<ConsumerPartitionAssignor.RebalanceProtocol> common =
            EnumSet.allOf(ConsumerPartitionAssignor.RebalanceProtocol.class);
        for (String a : assignors) common.retainAll(assignorInstance(a).supportedProtocols());
        return common.stream()
            .max(Comparator.comparingInt(p -> (int) p.id()))
            .map(p -> p.name().toLowerCase())
            .orElseThrow(() -> new IllegalArgumentException("assignors share no rebalance protocol"));
    }

    static final class Member implements ConsumerRebalanceListener {
        final Options opts;
        final String clientId;
        final String instanceId;
        final String protocol;
        final EventLog events;
        final RecordLog records;
        final ManifestLog manifests;
        final long startedMs = System.currentTimeMillis();
        String manifestKey;
        final AtomicBoolean running;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Set<TopicPartition> owned = new TreeSet<>(Comparator.comparing(TopicPartition::topic)
            .thenComparingInt(TopicPartition::partition));
        final Map<TopicPartition, Long> processed = new HashMap<>();
        long seq = 0;

        Member(Options opts, int index, EventLog events, RecordLog records, ManifestLog manifests,
               AtomicBoolean running) {
            this.opts = opts;
            this.manifests = manifests;
            this.events = events;
            this.records = records;
            this.running = running;
            this.clientId = opts.clientId.replace("{i}", Integer.toString(index));
            this.instanceId = opts.instanceId == null ? null : opts.instanceId.replace("{i}", Integer.toString(index));
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, opts.group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            if ("consumer".equals(opts.groupProtocol)) {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                if (opts.remoteAssignor != null) p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, opts.remoteAssignor);
                this.protocol = "consumer";
            } else {
                List<String> classes = new ArrayList<>();
                for (String a : opts.assignors) classes.add(assignorClass(a));
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, String.join(",", classes));
                this.protocol = classicProtocol(opts.assignors);
            }
            if (instanceId != null) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
            p.putAll(opts.props);
            this.consumer = new KafkaConsumer<>(p);
        }

        void wakeup() {
            consumer.wakeup();
        }

        void run() {
            consumer.subscribe(opts.topics, this);
            Trace.mark("subscribed");
            long lastCommit = System.currentTimeMillis();
            boolean fetched = false;
            try {
                while (running.get()) {
                    ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                    if (!fetched && !batch.isEmpty()) {
                        fetched = true;
                        Trace.mark("first_records");
                    }
                    boolean any = false;
                    for (ConsumerRecord<byte[], byte[]> r : batch) {
                        if (!running.get()) break; // SIGTERM: finish the record in hand, not the batch
                        if (opts.processMs > 0) Thread.sleep(opts.processMs);
                        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                        processed.put(tp, r.offset());
                        any = true;
                        if (records != null) records.write(clientId, r.topic(), r.partition(), r.offset(), r.timestamp());
                    }
                    if (records != null && !batch.isEmpty()) records.flush();
                    long now = System.currentTimeMillis();
                    if ("batch".equals(opts.commitMode)) {
                        if (any) {
                            try {
                                consumer.commitSync(offsetsFor(new ArrayList<>(processed.keySet())));
                            } catch (WakeupException e) {
                                throw e;
                            } catch (RuntimeException e) {
                                // a rebalance in progress refused it: the revoke's commit or the next batch's covers it
                            }
                        }
                    } else if (now - lastCommit >= 1000 && !processed.isEmpty()) {
                        consumer.commitAsync(offsetsFor(new ArrayList<>(processed.keySet())), null);
                        lastCommit = now;
                    }
                }
            } catch (WakeupException e) {
                // shutdown
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                Trace.mark("loop_end");
                try {
                    if (!processed.isEmpty()) consumer.commitSync(offsetsFor(new ArrayList<>(processed.keySet())));
                } catch (RuntimeException e) {
                    System.err.println("final commit failed: " + e);
                }
                switch (opts.closeMode) {
                    case "leave":
                        consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
                        break;
                    case "remain":
                        consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP));
                        break;
                    default:
                        consumer.close();
                }
                Trace.mark("close_returned");
                if (manifests != null && manifestKey != null) manifests.publish(manifestKey, null);
            }
        }

        Map<TopicPartition, OffsetAndMetadata> offsetsFor(Collection<TopicPartition> parts) {
            Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
            for (TopicPartition tp : parts) {
                Long off = processed.get(tp);
                if (off != null) out.put(tp, new OffsetAndMetadata(off + 1));
            }
            return out;
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            long t0 = System.nanoTime();
            owned.addAll(partitions);
            emit("assigned", partitions, null, null, t0);
            if (manifests != null) publishManifest();
        }

        /** The Manifest record of DESIGN.md / docs/contracts.md, published on every assignment. */
        void publishManifest() {
            String memberId = memberId();
            manifestKey = opts.group + "/" + (instanceId != null ? instanceId : memberId);
            String host;
            try {
                host = java.net.InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                host = "unknown";
            }
            StringBuilder assignors = new StringBuilder("[");
            if (!"consumer".equals(opts.groupProtocol)) {
                for (int i = 0; i < opts.assignors.size(); i++) {
                    if (i > 0) assignors.append(',');
                    assignors.append(Json.str(opts.assignors.get(i)));
                }
            }
            assignors.append(']');
            String value = "{\"v\":1,\"group\":" + Json.str(opts.group)
                + ",\"member_id\":" + Json.str(memberId)
                + ",\"instance_id\":" + Json.str(instanceId)
                + ",\"client_id\":" + Json.str(clientId)
                + ",\"host\":" + Json.str(host)
                + ",\"libraries\":{\"kafka-clients\":" + Json.str(clientsVersion())
                + ",\"java\":" + Json.str(System.getProperty("java.version")) + "}"
                + ",\"group_protocol\":" + Json.str(opts.groupProtocol)
                + ",\"assignors\":" + assignors
                + ",\"rebalance_protocol\":" + Json.str(protocol)
                + ",\"remote_assignor\":" + Json.str("consumer".equals(opts.groupProtocol) ? opts.remoteAssignor : null)
                + ",\"started_ms\":" + startedMs
                + ",\"heartbeat_ms\":" + System.currentTimeMillis() + "}";
            manifests.publish(manifestKey, value);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            long t0 = System.nanoTime();
            Map<TopicPartition, OffsetAndMetadata> offsets = offsetsFor(partitions);
            String error = null;
            if (!offsets.isEmpty()) {
                try {
                    consumer.commitSync(offsets);
                } catch (RuntimeException e) {
                    error = e.getClass().getSimpleName() + ": " + e.getMessage();
                    offsets = Map.of();
                }
            }
            for (TopicPartition tp : partitions) processed.remove(tp);
            owned.removeAll(partitions);
            emit("revoked", partitions, offsets, error, t0);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            long t0 = System.nanoTime();
            for (TopicPartition tp : partitions) processed.remove(tp);
            owned.removeAll(partitions);
            emit("lost", partitions, null, null, t0);
        }

        void emit(String kind, Collection<TopicPartition> partitions, Map<TopicPartition, OffsetAndMetadata> committed,
                  String error, long t0) {
            double callbackMs = (System.nanoTime() - t0) / 1e6;
            StringBuilder sb = new StringBuilder(256);
            sb.append("{\"v\":").append(EVENT_VERSION)
              .append(",\"ts_ms\":").append(System.currentTimeMillis())
              .append(",\"seq\":").append(seq++)
              .append(",\"group\":").append(Json.str(opts.group))
              .append(",\"member_id\":").append(Json.str(memberId()))
              .append(",\"instance_id\":").append(Json.str(instanceId))
              .append(",\"client_id\":").append(Json.str(clientId))
              .append(",\"protocol\":").append(Json.str(protocol))
              .append(",\"kind\":").append(Json.str(kind))
              .append(",\"partitions\":").append(Json.partitions(sorted(partitions)))
              .append(",\"owned\":").append(Json.partitions(owned))
              .append(",\"callback_ms\":").append(String.format(java.util.Locale.ROOT, "%.3f", callbackMs))
              .append(",\"committed\":");
            if (committed == null) {
                sb.append("null");
            } else {
                sb.append('[');
                boolean first = true;
                for (TopicPartition tp : sorted(committed.keySet())) {
                    if (!first) sb.append(',');
                    first = false;
                    sb.append('[').append(Json.str(tp.topic())).append(',').append(tp.partition()).append(',')
                      .append(committed.get(tp).offset()).append(']');
                }
                sb.append(']');
            }
            sb.append(",\"error\":").append(Json.str(error)).append('}');
            events.write(sb.toString());
        }

        String memberId() {
            try {
                return consumer.groupMetadata().memberId();
            } catch (RuntimeException e) {
                return "";
            }
        }

        static List<TopicPartition> sorted(Collection<TopicPartition> parts) {
            List<TopicPartition> list = new ArrayList<>(parts);
            list.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            return list;
        }
    }

    /** Bench instrumentation (`--trace FILE`): one "mark wall_ms pid cpu_ms" line per lifecycle point
     * (cpu_ms: the JVM's CPU time so far, which load does not stretch), for
     * bench/restart_floor.py's restart segments. Off (no file, no cost) unless asked for. */
    static final class Trace {
        private static Writer out;

        static synchronized void open(String path) throws IOException {
            if (path != null) out = new BufferedWriter(new FileWriter(path, true));
        }

        static synchronized void mark(String name) {
            if (out == null) return;
            long ms = System.currentTimeMillis();
            try {
                long cpu = ProcessHandle.current().info().totalCpuDuration().map(d -> d.toMillis()).orElse(-1L);
                out.write(name + " " + ms + " " + ProcessHandle.current().pid() + " " + cpu + "\n");
                out.flush();
            } catch (IOException ignored) {
                // instrumentation only
            }
        }

        static synchronized void close() {
            if (out == null) return;
            try {
                out.close();
            } catch (IOException ignored) {
                // instrumentation only
            }
            out = null;
        }
    }

    /** One producer per JVM for manifests; absent topic = one warning, members run on (like Python). */
    static final class ManifestLog {
        final String topic;
        final KafkaProducer<String, String> producer;

        private ManifestLog(String topic, KafkaProducer<String, String> producer) {
            this.topic = topic;
            this.producer = producer;
        }

        static ManifestLog open(String bootstrap, String topic) {
            Properties a = new Properties();
            a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin admin = Admin.create(a)) {
                if (!admin.listTopics().names().get(10, TimeUnit.SECONDS).contains(topic)) {
                    System.err.println("WARN manifest topic " + topic + " does not exist; manifests are not published");
                    return null;
                }
            } catch (Exception e) {
                System.err.println("WARN cannot check manifest topic " + topic + ": " + e);
                return null;
            }
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            return new ManifestLog(topic, new KafkaProducer<>(p));
        }

        void publish(String key, String value) {
            producer.send(new ProducerRecord<>(topic, key, value));
        }

        void close() {
            producer.close(Duration.ofSeconds(5));
        }
    }

    static final class Json {
        static String str(String s) {
            if (s == null) return "null";
            StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                }
            }
            return sb.append('"').toString();
        }

        static String partitions(Collection<TopicPartition> parts) {
            StringBuilder sb = new StringBuilder().append('[');
            boolean first = true;
            for (TopicPartition tp : parts) {
                if (!first) sb.append(',');
                first = false;
                sb.append('[').append(str(tp.topic())).append(',').append(tp.partition()).append(']');
            }
            return sb.append(']').toString();
        }
    }

    /** One writer shared by all members of the JVM; a line per event, flushed per event. */
    static final class EventLog {
        private final Writer out;

        EventLog(String path) throws IOException {
            this.out = "-".equals(path) ? new java.io.OutputStreamWriter(System.out) : new BufferedWriter(new FileWriter(path, true));
        }

        synchronized void write(String line) {
            try {
                out.write(line);
                out.write('\n');
                out.flush();
            } catch (IOException e) {
                System.err.println("event write failed: " + e);
            }
        }

        synchronized void close() {
            try {
                out.flush();
            } catch (IOException ignored) {
                // best effort at exit
            }
        }
    }

    /** Processed records as "client topic partition offset produced_ts consumed_ts" lines. */
    static final class RecordLog {
        private final BufferedWriter out;

        RecordLog(String path) throws IOException {
            this.out = new BufferedWriter(new FileWriter(path, true), 1 << 16);
        }

        synchronized void write(String client, String topic, int partition, long offset, long producedTs) {
            try {
                out.write(client + " " + topic + " " + partition + " " + offset + " " + producedTs + " "
                    + System.currentTimeMillis() + "\n");
            } catch (IOException e) {
                System.err.println("record write failed: " + e);
            }
        }

        synchronized void flush() {
            try {
                out.flush();
            } catch (IOException ignored) {
                // next flush retries
            }
        }

        synchronized void close() {
            flush();
        }
    }
}
