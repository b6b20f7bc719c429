import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Drives Apache Kafka's Java producer and consumer for the client matrix tests.
 *
 * <p>A message is one tab-separated line: hex key, hex value, headers as {@code hexname=hexvalue}
 * joined by commas. Usage:
 * <ul>
 * <li>{@code produce <bootstrap> <topic> <codec>}: sends each message line of stdin (idempotent,
 * acks=all), prints {@code partition offset timestamp} per message in input order.</li>
 * <li>{@code stream <bootstrap> <topic> <window>}: sends each message line of stdin as it comes
 * (idempotent, acks=all), at most {@code window} unacknowledged, and prints {@code ack index
 * partition offset} (or {@code error index exception}) as each send completes.</li>
 * <li>{@code consume <bootstrap> <topic> <partitions> <count>}: assigns every partition (no
 * group), reads from the beginning until {@code count} records, prints {@code partition offset
 * timestamp} and the message per record, then {@code begin|end partition offset} per partition.</li>
 * <li>{@code times <bootstrap> <topic>}: for each stdin line {@code partition timestamp} prints
 * {@code partition offset timestamp} of offsetsForTimes, or {@code partition -1 -1}.</li>
 * <li>{@code rack <bootstrap> <topic> <rack> <count>}: a consumer with {@code client.rack=rack}
 * reads partition 0 from the beginning until {@code count} records, prints {@code record
 * offset} per record, then where it read from (KIP-392): {@code replica id} (its
 * {@code preferred-read-replica} metric, -1 for the leader) and {@code node id bytes} (the
 * {@code incoming-byte-total} of each broker connection).</li>
 * </ul>
 */
public final class ClientProbe {
    private static final HexFormat HEX = HexFormat.of();
    private static final long DEADLINE_MS = 60_000;

    private ClientProbe() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], args[3], in);
            case "stream" -> stream(args[1], args[2], Integer.parseInt(args[3]), in);
            case "consume" -> consume(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            case "times" -> times(args[1], args[2], in);
            case "rack" -> rack(args[1], args[2], args[3], Integer.parseInt(args[4]));
            default -> throw new IllegalArgumentException("unknown operation " + args[0]);
        }
        System.out.flush();
    }

    private static KafkaProducer<byte[], byte[]> producer(String bootstrap, String codec) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("compression.type", codec);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        props.put("linger.ms", "5");
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String line) {
        String[] words = line.split("\t", -1);
        ProducerRecord<byte[], byte[]> record =
                new ProducerRecord<>(topic, HEX.parseHex(words[0]), HEX.parseHex(words[1]));
        if (!words[2].isEmpty()) {
            for (String header : words[2].split(",")) {
                String[] kv = header.split("=", -1);
                record.headers().add(new String(HEX.parseHex(kv[0]), StandardCharsets.UTF_8),
                        HEX.parseHex(kv[1]));
            }
        }
        return record;
    }

    private static void produce(String bootstrap, String topic, String codec, BufferedReader in)
            throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, codec)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            String line;
            while ((line = in.readLine()) != null && !line.isEmpty()) {
                sent.add(producer.send(record(topic, line)));
            }
            producer.flush();
            StringBuilder out = new StringBuilder();
            for (Future<RecordMetadata> future : sent) {
                RecordMetadata m = future.get();
                out.append(m.partition()).append('\t').append(m.offset()).append('\t')
                        .append(m.timestamp()).append('\n');
            }
            System.out.print(out);
        }
    }

    /** Each completion is printed as it happens: the test acts (kills a broker) mid-stream. */
    private static void stream(String bootstrap, String topic, int window, BufferedReader in)
            throws Exception {
        Semaphore unacknowledged = new Semaphore(window);
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, "none")) {
            String line;
            for (int i = 0; (line = in.readLine()) != null && !line.isEmpty(); i++) {
                int index = i;
                unacknowledged.acquire();
                producer.send(record(topic, line), (m, error) -> {
                    String said = error == null
                            ? "ack\t" + index + "\t" + m.partition() + "\t" + m.offset()
                            : "error\t" + index + "\t" + error;
                    synchronized (System.out) {
                        System.out.println(said);
                        System.out.flush();
                    }
                    unacknowledged.release();
                });
            }
            producer.flush();
        }
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        return consumer(bootstrap, new Properties());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Properties extra) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.auto.commit", "false");
        props.put("fetch.max.wait.ms", "100");
        props.putAll(extra);
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static void rack(String bootstrap, String topic, String rack, int count) {
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties extra = new Properties();
        extra.put("client.rack", rack);
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap, extra)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            int got = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    out.append("record\t").append(r.offset()).append('\n');
                    got++;
                }
            }
            consumer.metrics().forEach((name, metric) -> {
                if (name.name().equals("preferred-read-replica")
                        && topic.equals(name.tags().get("topic"))) {
                    out.append("replica\t").append(metric.metricValue()).append('\n');
                } else if (name.name().equals("incoming-byte-total")
                        && name.group().equals("consumer-node-metrics")) {
                    out.append("node\t").append(name.tags().get("node-id")).append('\t')
                            .append(metric.metricValue()).append('\n');
                }
            });
        }
        System.out.print(out);
    }

    private static void consume(String bootstrap, String topic, int partitions, int count) {
        List<TopicPartition> parts = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            parts.add(new TopicPartition(topic, p));
        }
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            int got = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    out.append(r.partition()).append('\t').append(r.offset()).append('\t')
                            .append(r.timestamp()).append('\t').append(HEX.formatHex(r.key()))
                            .append('\t').append(HEX.formatHex(r.value())).append('\t');
                    List<String> headers = new ArrayList<>();
                    for (Header h : r.headers()) {
                        headers.add(HEX.formatHex(h.key().getBytes(StandardCharsets.UTF_8)) + "="
                                + HEX.formatHex(h.value()));
                    }
                    out.append(String.join(",", headers)).append('\n');
                    got++;
                }
            }
            offsets(out, "begin", consumer.beginningOffsets(parts));
            offsets(out, "end", consumer.endOffsets(parts));
        }
        System.out.print(out);
    }

    private static void offsets(StringBuilder out, String kind, Map<TopicPartition, Long> found) {
        found.forEach((tp, offset) -> out.append(kind).append('\t').append(tp.partition()).append('\t')
                .append(offset).append('\n'));
    }

    private static void times(String bootstrap, String topic, BufferedReader in) throws Exception {
        List<String[]> asked = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            asked.add(line.split("\t"));
        }
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
            for (String[] words : asked) {
                TopicPartition tp = new TopicPartition(topic, Integer.parseInt(words[0]));
                Map<TopicPartition, Long> query = new HashMap<>();
                query.put(tp, Long.parseLong(words[1]));
                OffsetAndTimestamp found = consumer.offsetsForTimes(query).get(tp);
                out.append(tp.partition()).append('\t')
                        .append(found == null ? -1 : found.offset()).append('\t')
                        .append(found == null ? -1 : found.timestamp()).append('\n');
            }
        }
        System.out.print(out);
    }
}
