import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' word count with {@code processing.guarantee=exactly_once_v2}, for the
 * exactly-once acceptance test.
 *
 * <p>Usage: {@code WordCountEos <bootstrap.servers> <application.id> <state.dir> <input> <output>}.
 * Reads lines from {@code input}, splits them into lower-case words, counts each word in a
 * RocksDB store (its changelog and the repartition topic made by Streams, replication factor 3)
 * and writes every new count to {@code output} (key: the word, value: the count as a long).
 * The record cache is off, so each input word yields exactly one output record: under
 * exactly-once the committed output of a word is 1, 2, ..., its count. Prints {@code STATE
 * <new state>} on each state change (a fatal error: {@code FATAL <error>}, then the states to
 * ERROR); EOF on stdin closes it (prints {@code CLOSED <done in time> <state>}, exit 0 once
 * NOT_RUNNING).
 */
public final class WordCountEos {
    private WordCountEos() {
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        // a SIGKILLed instance's member leaves the group after 6 s (the brokers' minimum)
        props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
        props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(error -> {
            System.out.println("FATAL " + error);
            System.out.flush();
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // until EOF
        }
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.out.println("CLOSED " + closed + " " + streams.state());
        System.out.flush();
        System.exit(closed && streams.state() == KafkaStreams.State.NOT_RUNNING ? 0 : 1);
    }
}
