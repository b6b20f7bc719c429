import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Drives Apache Kafka's Java transactional producer and read_committed consumers for the
 * exactly-once acceptance tests.
 *
 * <p>Usage: {@code TxnProbe <bootstrap.servers>}. Each line on stdin is one call, its words
 * separated by tabs (operation first); each call prints one JSON line: {@code {"ok":true,
 * "result":...}} or {@code {"ok":false,"error":"<exception class>","message":"..."}}. Producers
 * and consumers live across calls under the names the calls give them. An empty line or EOF
 * ends it.
 * <ul>
 * <li>{@code producer NAME TXNID}: a transactional producer (acks=all, idempotent),
 * {@code initTransactions()} done.</li>
 * <li>{@code begin NAME}, {@code flush NAME}, {@code commit NAME}, {@code abort NAME},
 * {@code close-producer NAME}.</li>
 * <li>{@code send NAME TOPIC PARTITION VALUE}: {@code send} (its error, if any, surfaces at the
 * next flush or commit).</li>
 * <li>{@code consumer CNAME GROUP TOPIC}: a read_committed consumer of the classic group
 * {@code GROUP} subscribed to {@code TOPIC} (earliest, no auto commit).</li>
 * <li>{@code transform NAME CNAME SINK COUNT}: polls {@code CNAME} until it has {@code COUNT}
 * records, sends each value upper-cased to {@code SINK} at the record's partition through
 * producer {@code NAME} (in its open transaction), then {@code sendOffsetsToTransaction} with
 * the consumer's positions and group metadata; the result is {@code {"read": ["p:offset:value",
 * ...], "positions": {"p": offset}}}.</li>
 * <li>{@code close-consumer CNAME}.</li>
 * <li>{@code read TOPIC PARTITIONS ISOLATION COUNT}: a consumer of no group assigned every
 * partition from the start, at isolation level {@code ISOLATION}; reads until it has at least
 * {@code COUNT} records and its position reached every partition's end offset (the last stable
 * offset under read_committed, asked again each round), or the deadline; the values, in
 * partition-then-offset order per partition as read.</li>
 * </ul>
 */
public final class TxnProbe {
    private static final long DEADLINE_MS = 60_000;
    private static final Duration POLL = Duration.ofMillis(200);

    private final String bootstrap;
    private final Map<String, KafkaProducer<String, String>> producers = new HashMap<>();
    private final Map<String, KafkaConsumer<String, String>> consumers = new HashMap<>();

    private TxnProbe(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        TxnProbe probe = new TxnProbe(args[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String[] words = line.split("\t");
            System.out.println(probe.answer(words[0], Arrays.copyOfRange(words, 1, words.length)));
            System.out.flush();
        }
        for (KafkaConsumer<String, String> consumer : probe.consumers.values()) {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
        }
        for (KafkaProducer<String, String> producer : probe.producers.values()) {
            producer.close(Duration.ofSeconds(5));
        }
    }

    private String answer(String op, String[] args) {
        Map<String, Object> out = new TreeMap<>();
        try {
            out.put("result", call(op, args));
            out.put("ok", true);
        } catch (Exception e) {
            out.put("ok", false);
            out.put("error", e.getClass().getSimpleName());
            out.put("message", e.getMessage());
        }
        return Json.write(out);
    }

    private Object call(String op, String[] a) throws Exception {
        switch (op) {
            case "producer" -> {
                Properties props = new Properties();
                props.put("bootstrap.servers", bootstrap);
                props.put("client.id", "txn-probe-" + a[0]);
                props.put("transactional.id", a[1]);
                props.put("max.block.ms", "30000");
                props.put("linger.ms", "5");
                KafkaProducer<String, String> made =
                        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
                producers.put(a[0], made);
                made.initTransactions();
                return null;
            }
            case "begin" -> producers.get(a[0]).beginTransaction();
            case "send" -> producers.get(a[0]).send(
                    new ProducerRecord<>(a[1], Integer.parseInt(a[2]), null, a[3]));
            case "flush" -> producers.get(a[0]).flush();
            case "commit" -> producers.get(a[0]).commitTransaction();
            case "abort" -> producers.get(a[0]).abortTransaction();
            case "close-producer" -> producers.remove(a[0]).close(Duration.ofSeconds(10));
            case "consumer" -> {
                Properties props = consumerProperties("read_committed");
                props.put("group.id", a[1]);
                props.put("client.id", "txn-probe-" + a[0]);
                KafkaConsumer<String, String> made =
                        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
                made.subscribe(List.of(a[2]));
                consumers.put(a[0], made);
                return null;
            }
            case "transform" -> {
                return transform(producers.get(a[0]), consumers.get(a[1]), a[2], Integer.parseInt(a[3]));
            }
            case "close-consumer" -> consumers.remove(a[0]).close(CloseOptions.timeout(Duration.ofSeconds(10)));
            case "read" -> {
                return read(a[0], Integer.parseInt(a[1]), a[2], Integer.parseInt(a[3]));
            }
            default -> throw new IllegalArgumentException("unknown operation " + op);
        }
        return null;
    }

    private Properties consumerProperties(String isolation) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("isolation.level", isolation);
        return props;
    }

    private static Object transform(KafkaProducer<String, String> producer,
            KafkaConsumer<String, String> consumer, String sink, int count) {
        List<String> read = new ArrayList<>();
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (read.size() < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                read.add(record.partition() + ":" + record.offset() + ":" + record.value());
                producer.send(new ProducerRecord<>(sink, record.partition(), null, record.value().toUpperCase()));
            }
        }
        if (read.size() != count) {
            throw new IllegalStateException("read " + read.size() + " records, not " + count + ": " + read);
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        Map<String, Object> positions = new TreeMap<>();
        for (TopicPartition partition : consumer.assignment()) {
            long position = consumer.position(partition);
            offsets.put(partition, new OffsetAndMetadata(position));
            positions.put(String.valueOf(partition.partition()), position);
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        producer.flush();
        return Map.of("read", read, "positions", positions);
    }

    private Object read(String topic, int partitions, String isolation, int count) {
        Properties props = consumerProperties(isolation);
        props.put("client.id", "txn-probe-reader");
        List<TopicPartition> assigned = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            assigned.add(new TopicPartition(topic, p));
        }
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                    values.add(record.value());
                }
                if (values.size() >= count && atEnd(consumer, assigned)) {
                    break;
                }
            }
        }
        return values;
    }

    /** Whether the position reached each partition's end offset (the LSO under read_committed). */
    private static boolean atEnd(KafkaConsumer<String, String> consumer, Collection<TopicPartition> assigned) {
        Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
        for (TopicPartition partition : assigned) {
            if (consumer.position(partition) < ends.get(partition)) {
                return false;
            }
        }
        return true;
    }
}
