import java.io.BufferedReader;
import java.io.FileReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Apache Kafka's Java clients on a secured cluster, for the secure matrix
 * (tests/acceptance/test_secure_matrix.py).
 *
 * <p>{@code SecureProbe <bootstrap> <client.properties>}: the properties file holds the security
 * settings (security.protocol, sasl.*, ssl.*). Each stdin line is one operation, its words
 * separated by tabs; each prints one line: {@code ok} and its result words, or {@code error},
 * the simple class name of the exception the client raised (the cause of a failed future) and
 * its message. Values are text without tabs or spaces.
 * <ul>
 * <li>{@code createTopic topic partitions replicas} (Admin).</li>
 * <li>{@code createAcl topic}: an ACL allowing User:* to read the topic (Admin).</li>
 * <li>{@code produce topic prefix count}: values {@code prefix-i} (idempotent, acks=all); the
 * result is {@code partition:offset} per value in order.</li>
 * <li>{@code consume topic partitions count}: assigns every partition from the beginning (no
 * group) until {@code count} records; {@code partition:offset:value} per record.</li>
 * <li>{@code partitions topic}: the topic's partition count (Admin).</li>
 * <li>{@code group topic group count}: subscribes, polls until {@code count} records and commits
 * them synchronously; {@code partition:offset:value} per record.</li>
 * </ul>
 */
public final class SecureProbe {
    private static final long TIMEOUT_S = 30;
    private static final long DEADLINE_MS = 60_000;

    private SecureProbe() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileReader file = new FileReader(args[1], StandardCharsets.UTF_8)) {
            props.load(file);
        }
        props.put("bootstrap.servers", args[0]);
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "30000");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.isEmpty()) {
            String[] words = line.split("\t");
            String answer;
            try {
                answer = "ok\t" + call(props, words);
            } catch (ExecutionException e) {
                answer = failed(e.getCause());
            } catch (Exception e) {
                answer = failed(e);
            }
            System.out.println(answer);
            System.out.flush();
        }
    }

    private static String failed(Throwable error) {
        String message = String.valueOf(error.getMessage()).replaceAll("\\s+", " ");
        return "error\t" + error.getClass().getSimpleName() + "\t" + message;
    }

    private static String call(Properties props, String[] a) throws Exception {
        return switch (a[0]) {
            case "createTopic" -> createTopic(props, a[1], Integer.parseInt(a[2]), Short.parseShort(a[3]));
            case "createAcl" -> createAcl(props, a[1]);
            case "partitions" -> partitions(props, a[1]);
            case "produce" -> produce(props, a[1], a[2], Integer.parseInt(a[3]));
            case "consume" -> consume(props, a[1], Integer.parseInt(a[2]), Integer.parseInt(a[3]));
            case "group" -> group(props, a[1], a[2], Integer.parseInt(a[3]));
            default -> throw new IllegalArgumentException("unknown operation " + a[0]);
        };
    }

    private static String createTopic(Properties props, String topic, int partitions, short replicas)
            throws Exception {
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, replicas))).all()
                    .get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        return "created";
    }

    private static String createAcl(Properties props, String topic) throws Exception {
        AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:*", "*", AclOperation.READ, AclPermissionType.ALLOW));
        try (Admin admin = Admin.create(props)) {
            admin.createAcls(List.of(binding)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        return "created";
    }

    private static String partitions(Properties props, String topic) throws Exception {
        try (Admin admin = Admin.create(props)) {
            return String.valueOf(admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(TIMEOUT_S, TimeUnit.SECONDS).get(topic).partitions().size());
        }
    }

    private static String produce(Properties props, String topic, String prefix, int count) throws Exception {
        Properties mine = new Properties();
        mine.putAll(props);
        mine.put("enable.idempotence", "true");
        mine.put("acks", "all");
        mine.put("linger.ms", "5");
        mine.put("max.block.ms", "20000");
        mine.put("delivery.timeout.ms", "30000");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(mine, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++) {
                Future<RecordMetadata> future = producer.send(new ProducerRecord<>(topic, String.valueOf(i), prefix + "-" + i));
                if (future.isDone()) {
                    future.get(); // refused at once (no metadata for the topic): sending on would wait each time
                }
                sent.add(future);
            }
            producer.flush();
            List<String> out = new ArrayList<>();
            for (Future<RecordMetadata> future : sent) {
                RecordMetadata m = future.get();
                out.add(m.partition() + ":" + m.offset());
            }
            return String.join(" ", out);
        }
    }

    private static KafkaConsumer<String, String> consumer(Properties props, String group) {
        Properties mine = new Properties();
        mine.putAll(props);
        mine.put("enable.auto.commit", "false");
        mine.put("auto.offset.reset", "earliest");
        mine.put("fetch.max.wait.ms", "100");
        if (group != null) {
            mine.put("group.id", group);
            mine.put("group.protocol", "classic");
        }
        return new KafkaConsumer<>(mine, new StringDeserializer(), new StringDeserializer());
    }

    /** Polls until {@code count} records or the deadline; each as {@code partition:offset:value}. */
    private static List<String> poll(KafkaConsumer<String, String> consumer, int count) {
        List<String> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (out.size() < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                out.add(r.partition() + ":" + r.offset() + ":" + r.value());
            }
        }
        return out;
    }

    private static String consume(Properties props, String topic, int partitions, int count) {
        List<TopicPartition> parts = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            parts.add(new TopicPartition(topic, p));
        }
        try (KafkaConsumer<String, String> consumer = consumer(props, null)) {
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            return String.join(" ", poll(consumer, count));
        }
    }

    private static String group(Properties props, String topic, String group, int count) {
        try (KafkaConsumer<String, String> consumer = consumer(props, group)) {
            consumer.subscribe(List.of(topic));
            List<String> out = poll(consumer, count);
            consumer.commitSync();
            return String.join(" ", out);
        }
    }
}
