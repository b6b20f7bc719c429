// Runs many of Kafka's tool main classes in one JVM, one after another, for the oracle tests
// (tests/oracle/kafka_tools.py): a JVM start costs seconds on a loaded 2-core machine, and
// the tools comparison runs dozens of tools per cluster.
//
// Usage: java -cp <its classes>:<Kafka's classpath> ToolBatch <script> <output directory>
// Each line of the script is one run, its fields separated by tabs: a name, a file to read as
// standard input ("-" for none), the main class, then its arguments. Each run's standard
// output, standard error and exit code go to <name>.out, <name>.err and <name>.rc in the
// output directory. Kafka's tools end with Exit.exit (org.apache.kafka.common.utils.internals),
// whose procedures are replaced here: the exit code is recorded and the tool's main unwound,
// and what it writes after asking to exit (a tool catching the unwinding prints it and asks
// again) is dropped, as a JVM that exited would not have written it. The tools parsing their
// arguments with argparse4j's parseArgsOrFail call System.exit: a security manager (Java 17
// still allows one) turns that into the same unwinding. The shutdown hooks a tool adds
// (through Exit.addShutdownHook, or Runtime's: the verifiable producer closes its producer
// and prints its last lines there) run when its main ends, as a JVM's would, their output
// kept; Runtime's hooks are read from java.lang.ApplicationShutdownHooks, which needs
// --add-opens java.base/java.lang=ALL-UNNAMED.
// A name followed by "?" and a text marks a read that follows a write: Kafka's broker answers
// it from its own metadata image, which may not hold the write yet, so the run is repeated
// (for at most REPEAT_FOR_MS) while it exits 0 without that text in its standard output;
// "?!" and a text: repeated while it exits 0 with that text (a read after a deletion).

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Permission;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.utils.internals.Exit;

public final class ToolBatch {
    /** Unwinds a tool's main when it calls Exit.exit or Exit.halt. */
    private static final class ToolExit extends Error {
        ToolExit() {
            super(null, null, false, false);
        }
    }

    private static Integer exitCode;
    private static ByteArrayOutputStream out;
    private static ByteArrayOutputStream err;
    private static int outAtExit;
    private static int errAtExit;
    private static final List<Runnable> HOOKS = new ArrayList<>();
    private static final long REPEAT_FOR_MS = 15_000;
    private static final long REPEAT_PAUSE_MS = 100;

    private static void exit(int code) {
        if (exitCode == null) {
            System.out.flush();
            System.err.flush();
            exitCode = code;
            outAtExit = out.size();
            errAtExit = err.size();
        }
        throw new ToolExit();
    }

    private static byte[] written(ByteArrayOutputStream stream, int atExit) {
        byte[] bytes = stream.toByteArray();
        return exitCode == null ? bytes : Arrays.copyOf(bytes, atExit);
    }

    /** The JVM's registered shutdown hooks (java.lang.ApplicationShutdownHooks.hooks). */
    @SuppressWarnings("unchecked")
    private static Map<Thread, Thread> runtimeHooks() throws ReflectiveOperationException {
        Field hooks = Class.forName("java.lang.ApplicationShutdownHooks").getDeclaredField("hooks");
        hooks.setAccessible(true);
        return (Map<Thread, Thread>) hooks.get(null);
    }

    /** Runtime's hooks the tool added are taken over: removed, and run with Exit's. */
    private static void takeRuntimeHooks() throws ReflectiveOperationException {
        for (Thread thread : new ArrayList<>(runtimeHooks().keySet())) {
            Runtime.getRuntime().removeShutdownHook(thread);
            HOOKS.add(() -> {
                thread.start();
                try {
                    thread.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
    }

    /** The tool's shutdown hooks, their output kept after the cut at its exit. */
    private static void runHooks() throws ReflectiveOperationException {
        takeRuntimeHooks();
        if (HOOKS.isEmpty()) {
            return;
        }
        System.out.flush();
        System.err.flush();
        byte[] outBefore = written(out, outAtExit);
        byte[] errBefore = written(err, errAtExit);
        out.reset();
        err.reset();
        out.writeBytes(outBefore);
        err.writeBytes(errBefore);
        Integer code = exitCode;
        exitCode = null;
        for (Runnable hook : HOOKS) {
            try {
                hook.run();
            } catch (ToolExit | RuntimeException e) {
                // a hook ending the JVM again, or failing, ends only itself
            }
        }
        HOOKS.clear();
        System.out.flush();
        System.err.flush();
        exitCode = code;
        outAtExit = out.size();
        errAtExit = err.size();
    }

    /** One run of the line's tool, its output in out and err. */
    private static void runOnce(String[] fields, byte[] input, PrintStream realOut,
                                PrintStream realErr, InputStream realIn) throws Exception {
        out = new ByteArrayOutputStream();
        err = new ByteArrayOutputStream();
        exitCode = null;
        System.setIn(new ByteArrayInputStream(input));
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            Method main = Class.forName(fields[2]).getMethod("main", String[].class);
            main.invoke(null, (Object) Arrays.copyOfRange(fields, 3, fields.length));
        } catch (ReflectiveOperationException | LinkageError e) {
            if (exitCode == null) {
                (e instanceof InvocationTargetException ? e.getCause() : e).printStackTrace();
                exitCode = 1;
                outAtExit = out.size();
                errAtExit = err.size();
            }
        } finally {
            runHooks();
            System.out.flush();
            System.err.flush();
            System.setOut(realOut);
            System.setErr(realErr);
            System.setIn(realIn);
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        Path output = Path.of(args[1]);
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        Exit.setShutdownHookAdder((name, hook) -> HOOKS.add(hook));
        System.setSecurityManager(new SecurityManager() {
            @Override
            public void checkPermission(Permission permission) {
            }

            @Override
            public void checkPermission(Permission permission, Object context) {
            }

            @Override
            public void checkExit(int status) {
                exit(status);
            }
        });
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        for (String line : lines) {
            if (line.isBlank()) {
                continue;
            }
            String[] fields = line.split("\t", -1);
            int mark = fields[0].indexOf('?');
            String name = mark < 0 ? fields[0] : fields[0].substring(0, mark);
            String until = mark < 0 ? null : fields[0].substring(mark + 1);
            byte[] input = fields[1].equals("-") ? new byte[0] : Files.readAllBytes(Path.of(fields[1]));
            long deadline = System.currentTimeMillis() + REPEAT_FOR_MS;
            runOnce(fields, input, realOut, realErr, realIn);
            boolean gone = until != null && until.startsWith("!");
            String text = gone ? until.substring(1) : until;
            while (until != null && (exitCode == null || exitCode == 0)
                    && new String(written(out, outAtExit), StandardCharsets.UTF_8).contains(text) == gone
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(REPEAT_PAUSE_MS);
                runOnce(fields, input, realOut, realErr, realIn);
            }
            Files.write(output.resolve(name + ".out"), written(out, outAtExit));
            Files.write(output.resolve(name + ".err"), written(err, errAtExit));
            Files.writeString(output.resolve(name + ".rc"), String.valueOf(exitCode == null ? 0 : exitCode));
        }
    }
}
