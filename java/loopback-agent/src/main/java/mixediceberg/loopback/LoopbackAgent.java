package mixediceberg.loopback;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.net.InetAddress;
import java.security.ProtectionDomain;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Makes the gRPC servers that flink-python starts for its Python workers listen on loopback only.
 *
 * <p>A PyFlink operator in process mode serves its Python worker (a Beam SDK harness) through six
 * Fn API gRPC servers: control, data, state, logging, provisioning, artifacts. flink-python 2.2's
 * copy of Beam's {@code ServerFactory} hands the worker a loopback URL but builds each server with
 * the vendored gRPC's {@code NettyServerBuilder.forPort(port)}, which binds the wildcard address;
 * no Flink or Beam option, nor any JVM property, changes that (docs/ingest.md, "Network exposure").
 * The workers only ever connect to the loopback URL, so the servers lose nothing on loopback.
 *
 * <p>This agent rewrites the body of that one method, {@code forPort(int)}, when the class loads,
 * to {@code forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))}: the same
 * builder on the loopback address. Nothing else is touched; in flink-python 2.2.1 Beam's
 * {@code ServerFactory} is the method's only caller (the epoll factories pass their own addresses
 * to {@code forAddress}). It names the vendored class exactly: a flink-python built on another
 * Beam (another vendored gRPC) does not match, and then the agent logs one warning when Beam's
 * {@code ServerFactory} loads and changes nothing, so the job runs as it would without it.
 *
 * <p>Until that class loads the agent costs nothing but a name comparison per class loaded: Byte
 * Buddy, which does the rewrite ({@link Rewrite}), is loaded only then.
 *
 * <p>Load it with {@code -javaagent:mixed-iceberg-loopback-agent.jar} in the JVM that runs the
 * Python operators: the local job's own JVM (the ingest job adds it) or a cluster's TaskManagers
 * ({@code env.java.opts.taskmanager}). Leaving it out is the setting that keeps Beam's binding.
 */
public final class LoopbackAgent implements ClassFileTransformer {
  /** The vendored gRPC server builder of flink-python 2.2 (Beam's vendored gRPC 1.60.1). */
  static final String TARGET = "org.apache.beam.vendor.grpc.v1p60p1.io.grpc.netty.NettyServerBuilder";

  /** Beam's server factory: when it loads and {@link #TARGET} is not beside it, say so. */
  static final String CALLER = "org.apache.beam.sdk.fn.server.ServerFactory";

  private static final String TARGET_FILE = TARGET.replace('.', '/');
  private static final String CALLER_FILE = CALLER.replace('.', '/');
  private static final AtomicBoolean WARNED = new AtomicBoolean();

  private LoopbackAgent() {}

  public static void premain(String arguments, Instrumentation instrumentation) {
    instrumentation.addTransformer(new LoopbackAgent());
  }

  @Override
  public byte[] transform(
      ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain, byte[] classFile) {
    if (TARGET_FILE.equals(name)) {
      try {
        byte[] rewritten = Rewrite.bindLoopback(loader, classFile);
        if (rewritten != null) {
          Log.info(
              "Beam's Fn API gRPC servers listen on " + InetAddress.getLoopbackAddress().getHostAddress() + " (" + TARGET
                  + ".forPort rewritten by mixed-iceberg's loopback agent)");
        }
        return rewritten;
      } catch (RuntimeException | LinkageError e) {
        // The JVM would drop the exception and load the class as it is; say why.
        warnOnce("rewriting " + TARGET + " failed (" + e + ")");
        return null;
      }
    }
    if (CALLER_FILE.equals(name)) {
      ClassLoader finder = loader != null ? loader : ClassLoader.getSystemClassLoader();
      if (finder.getResource(TARGET_FILE + ".class") == null) {
        warnOnce(CALLER + " loaded without " + TARGET);
      }
    }
    return null;
  }

  static void warnOnce(String why) {
    if (WARNED.compareAndSet(false, true)) {
      Log.warn(
          why + ": Beam's Fn API gRPC servers stay where flink-python binds them (every interface);"
              + " this agent knows flink-python 2.2's vendored gRPC only");
    }
  }
}
