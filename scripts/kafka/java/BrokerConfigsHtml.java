import kafka.server.KafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;

/**
 * Prints the pinned Kafka's broker config reference as its site renders it
 * (generated/kafka_config.html): the input of scripts/gen_kafka_broker_configs.py.
 */
public final class BrokerConfigsHtml {
    private BrokerConfigsHtml() { }

    public static void main(String[] args) {
        System.out.println(KafkaConfig.configDef().toHtml(
            4, key -> "brokerconfigs_" + key, DynamicBrokerConfig.dynamicConfigUpdateModes()));
    }
}
