import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java consumer in a consumer group, for the acceptance tests.
 *
 * <p>{@code consume <bootstrap> <topic> <group> <group.protocol> <count>}: subscribes to the
 * topic, polls until {@code count} records arrived (or a deadline passes), commits them
 * synchronously and closes (leaving the group). Prints {@code record partition offset} per
 * record, then {@code assigned partition} for each partition it held at the end.
 */
public final class GroupProtocolProbe {
    private static final long DEADLINE_MS = 60_000;

    private GroupProtocolProbe() {
    }

    public static void main(String[] args) {
        if (!"consume".equals(args[0])) {
            throw new IllegalArgumentException("unknown operation " + args[0]);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[1]);
        props.put("group.id", args[3]);
        props.put("group.protocol", args[4]);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        int count = Integer.parseInt(args[5]);
        StringBuilder out = new StringBuilder();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(args[2]));
            int got = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    out.append("record\t").append(r.partition()).append('\t').append(r.offset())
                            .append('\n');
                    got++;
                }
            }
            consumer.commitSync();
            Set<Integer> held = new TreeSet<>();
            for (TopicPartition tp : consumer.assignment()) {
                held.add(tp.partition());
            }
            for (int partition : held) {
                out.append("assigned\t").append(partition).append('\n');
            }
        }
        System.out.print(out);
        System.out.flush();
    }
}
