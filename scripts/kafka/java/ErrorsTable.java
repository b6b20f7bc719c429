import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

/**
 * Prints the pinned Kafka's error table, one error per line: its name, its code and whether
 * its exception is retriable (the input of scripts/gen_error_codes.py).
 */
public final class ErrorsTable {
    private ErrorsTable() { }

    public static void main(String[] args) {
        for (Errors error : Errors.values()) {
            boolean retriable = error.exception() instanceof RetriableException;
            System.out.println(error.name() + "\t" + error.code() + "\t" + retriable);
        }
    }
}
