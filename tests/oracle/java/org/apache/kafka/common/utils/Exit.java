// kafka-shell 4.3.0 (the newest published; scripts/kafka/pom.xml) calls this class, which
// Kafka 4.4.0 moved to org.apache.kafka.common.utils.internals: what the shell calls is
// forwarded there, so it runs on 4.4.0's jars (and ToolBatch's exit procedures see it).
package org.apache.kafka.common.utils;

public final class Exit {
    private Exit() {
    }

    public static void exit(int statusCode) {
        org.apache.kafka.common.utils.internals.Exit.exit(statusCode);
    }

    public static void exit(int statusCode, String message) {
        org.apache.kafka.common.utils.internals.Exit.exit(statusCode, message);
    }

    public static void addShutdownHook(String name, Runnable runnable) {
        org.apache.kafka.common.utils.internals.Exit.addShutdownHook(name, runnable);
    }
}
