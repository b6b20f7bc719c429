import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a classic consumer group in a JVM of its own, for the group matrix
 * (tests/acceptance/test_group_matrix.py); it prints the lines tests/acceptance/group_member.py
 * prints for the Python clients.
 *
 * <p>{@code <bootstrap> <topic> <group> <session.timeout.ms>}: subscribes and polls; after each
 * poll commits synchronously the next offsets of the records it has not committed yet. Prints {@code assigned partitions}
 * whenever its assignment changes, {@code record partition offset value} per record,
 * {@code committed partition offset} per committed offset or {@code commit-failed error}, and
 * {@code closed} once closed. A {@code close} line on stdin (or its end) closes the consumer.
 */
public final class GroupMemberProbe {
    private static volatile boolean stop;

    private GroupMemberProbe() {
    }

    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        props.put("group.protocol", "classic");
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("session.timeout.ms", args[3]);
        props.put("heartbeat.interval.ms", "500");
        props.put("max.poll.interval.ms", "30000");
        props.put("fetch.max.wait.ms", "100");
        Thread closer = new Thread(GroupMemberProbe::waitForClose);
        closer.setDaemon(true);
        closer.start();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(args[1]));
            run(consumer);
        }
        say("closed");
    }

    private static void waitForClose() {
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null && !"close".equals(line.strip())) {
                // other lines mean nothing
            }
        } catch (IOException e) {
            // the test went away: close as on end of input
        }
        stop = true;
    }

    /**
     * Polls, prints and commits until told to stop. An offset whose commit failed (the group
     * rebalanced) is committed again after the next poll if the member still owns its
     * partition; else the new owner reads its records again.
     */
    private static void run(KafkaConsumer<byte[], byte[]> consumer) {
        String shown = null;
        Map<TopicPartition, OffsetAndMetadata> offsets = new TreeMap<>(
                (a, b) -> Integer.compare(a.partition(), b.partition()));
        while (!stop) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                say("record\t" + r.partition() + "\t" + r.offset() + "\t"
                        + new String(r.value(), StandardCharsets.UTF_8));
                offsets.merge(new TopicPartition(r.topic(), r.partition()),
                        new OffsetAndMetadata(r.offset() + 1),
                        (a, b) -> a.offset() >= b.offset() ? a : b);
            }
            Set<Integer> owned = new TreeSet<>();
            for (TopicPartition tp : consumer.assignment()) {
                owned.add(tp.partition());
            }
            offsets.keySet().retainAll(consumer.assignment());
            String now = String.join(",", owned.stream().map(String::valueOf).toList());
            if (!now.equals(shown)) {
                shown = now;
                say("assigned\t" + now);
            }
            if (offsets.isEmpty()) {
                continue;
            }
            try {
                consumer.commitSync(offsets);
            } catch (KafkaException e) {
                say("commit-failed\t" + e);
                continue;
            }
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                say("committed\t" + e.getKey().partition() + "\t" + e.getValue().offset());
            }
            offsets.clear();
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
