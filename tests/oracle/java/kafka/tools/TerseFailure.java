// kafka-shell 4.3.0 (the newest published; scripts/kafka/pom.xml) names this class, which
// Kafka 4.4.0 moved to org.apache.kafka.server.util: defined again here as 4.3.0 had it, so
// the shell runs on 4.4.0's jars.
package kafka.tools;

import org.apache.kafka.common.KafkaException;

public class TerseFailure extends KafkaException {
    public TerseFailure(String message) {
        super(message);
    }
}
