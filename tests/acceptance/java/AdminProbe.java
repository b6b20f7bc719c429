import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Drives Apache Kafka's Java Admin client for the acceptance tests.
 *
 * <p>Usage: {@code AdminProbe <bootstrap.servers|bootstrap.controllers> <addresses>}. Each line
 * on stdin is one call, its words separated by tabs (operation first); each call prints one
 * JSON line: {@code {"ok":true,"result":...}} or {@code {"ok":false,"error":"<exception class>",
 * "message":"..."}} with the cause of the failed future. An empty line or EOF ends it.
 */
public final class AdminProbe {
    private static final long TIMEOUT_S = 40;

    private AdminProbe() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(args[0], args[1]);
        props.put("client.id", "admin-probe");
        props.put("request.timeout.ms", "10000");
        props.put("default.api.timeout.ms", "30000");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(props)) {
            String line;
            while ((line = in.readLine()) != null && !line.isEmpty()) {
                String[] words = line.split("\t");
                System.out.println(answer(admin, words[0], Arrays.copyOfRange(words, 1, words.length)));
                System.out.flush();
            }
        }
    }

    private static String answer(Admin admin, String op, String[] args) {
        Map<String, Object> out = new TreeMap<>();
        try {
            out.put("result", call(admin, op, args));
            out.put("ok", true);
        } catch (ExecutionException e) {
            failed(out, e.getCause());
        } catch (Exception e) {
            failed(out, e);
        }
        return Json.write(out);
    }

    private static void failed(Map<String, Object> out, Throwable error) {
        out.put("ok", false);
        out.put("error", error.getClass().getSimpleName());
        out.put("message", error.getMessage());
    }

    private static Object call(Admin admin, String op, String[] a) throws Exception {
        switch (op) {
            case "describeCluster":
                return cluster(admin.describeCluster());
            case "createTopic":
                admin.createTopics(List.of(new NewTopic(a[0], Integer.parseInt(a[1]), Short.parseShort(a[2]))))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return null;
            case "listTopics":
                return new ArrayList<>(new TreeSet<>(
                        admin.listTopics().names().get(TIMEOUT_S, TimeUnit.SECONDS)));
            case "describeTopics":
                return topics(admin.describeTopics(List.of(a)).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS));
            case "deleteTopics":
                admin.deleteTopics(List.of(a)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return null;
            case "describeConfigs":
                ConfigResource resource = resource(a[0], a[1]);
                return configs(admin.describeConfigs(List.of(resource)).all()
                        .get(TIMEOUT_S, TimeUnit.SECONDS).get(resource));
            case "alterConfig":
                AlterConfigOp set = new AlterConfigOp(new ConfigEntry(a[2], a[3]), AlterConfigOp.OpType.SET);
                admin.incrementalAlterConfigs(Map.of(resource(a[0], a[1]), List.of(set)))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return null;
            case "describeQuorum":
                return quorum(admin.describeMetadataQuorum().quorumInfo().get(TIMEOUT_S, TimeUnit.SECONDS));
            case "addRaftVoter":
                RaftVoterEndpoint endpoint = new RaftVoterEndpoint(a[2], a[3], Integer.parseInt(a[4]));
                admin.addRaftVoter(Integer.parseInt(a[0]), Uuid.fromString(a[1]), Set.of(endpoint))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return null;
            case "removeRaftVoter":
                admin.removeRaftVoter(Integer.parseInt(a[0]), Uuid.fromString(a[1]))
                        .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return null;
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
    }

    private static ConfigResource resource(String type, String name) {
        return new ConfigResource(ConfigResource.Type.valueOf(type), name);
    }

    private static Map<String, Object> cluster(DescribeClusterResult described) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        out.put("clusterId", described.clusterId().get(TIMEOUT_S, TimeUnit.SECONDS));
        Node controller = described.controller().get(TIMEOUT_S, TimeUnit.SECONDS);
        out.put("controller", controller == null ? null : controller.id());
        List<Object> nodes = new ArrayList<>();
        for (Node node : described.nodes().get(TIMEOUT_S, TimeUnit.SECONDS)) {
            nodes.add(Map.of("id", node.id(), "host", node.host(), "port", node.port()));
        }
        out.put("nodes", nodes);
        return out;
    }

    private static Map<String, Object> topics(Map<String, TopicDescription> described) {
        Map<String, Object> out = new TreeMap<>();
        for (TopicDescription topic : described.values()) {
            List<Object> partitions = new ArrayList<>();
            for (TopicPartitionInfo p : topic.partitions()) {
                Map<String, Object> row = new TreeMap<>();
                row.put("partition", p.partition());
                row.put("leader", p.leader() == null ? null : p.leader().id());
                row.put("replicas", ids(p.replicas()));
                row.put("isr", ids(p.isr()));
                partitions.add(row);
            }
            out.put(topic.name(), Map.of("topicId", topic.topicId().toString(), "internal", topic.isInternal(),
                    "partitions", partitions));
        }
        return out;
    }

    private static List<Object> ids(Collection<Node> nodes) {
        List<Object> out = new ArrayList<>();
        nodes.forEach(node -> out.add(node.id()));
        return out;
    }

    private static Map<String, Object> configs(Config config) {
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry entry : config.entries()) {
            Map<String, Object> row = new TreeMap<>();
            row.put("value", entry.value());
            row.put("source", entry.source().name());
            row.put("readOnly", entry.isReadOnly());
            row.put("sensitive", entry.isSensitive());
            out.put(entry.name(), row);
        }
        return out;
    }

    private static Map<String, Object> quorum(QuorumInfo info) {
        Map<String, Object> out = new TreeMap<>();
        out.put("leaderId", info.leaderId());
        out.put("leaderEpoch", info.leaderEpoch());
        out.put("highWatermark", info.highWatermark());
        out.put("voters", replicas(info.voters()));
        out.put("observers", replicas(info.observers()));
        Map<String, Object> nodes = new TreeMap<>();
        info.nodes().forEach((id, node) -> {
            List<Object> endpoints = new ArrayList<>();
            for (RaftVoterEndpoint e : node.endpoints()) {
                endpoints.add(Map.of("name", e.name(), "host", e.host(), "port", e.port()));
            }
            nodes.put(String.valueOf(id), endpoints);
        });
        out.put("nodes", nodes);
        return out;
    }

    private static List<Object> replicas(List<QuorumInfo.ReplicaState> states) {
        List<Object> out = new ArrayList<>();
        for (QuorumInfo.ReplicaState state : states) {
            out.add(Map.of("id", state.replicaId(), "directoryId", state.replicaDirectoryId().toString(),
                    "logEndOffset", state.logEndOffset()));
        }
        return out;
    }
}
