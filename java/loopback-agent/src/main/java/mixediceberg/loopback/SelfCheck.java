package mixediceberg.loopback;

import java.util.List;

/**
 * Starts a server the way Beam's {@code ServerFactory} does ({@code NettyServerBuilder.forPort(0)})
 * and prints the addresses it listens on, one a line; tests/integration/test_loopback_agent.py runs
 * it with and without the agent:
 *
 * <pre>
 * java -javaagent:AGENT.jar -cp AGENT.jar:flink-python-2.2.1.jar mixediceberg.loopback.SelfCheck
 * </pre>
 *
 * <p>By reflection, so that the agent compiles without flink-python on its classpath.
 */
public final class SelfCheck {
  private SelfCheck() {}

  public static void main(String[] args) throws ReflectiveOperationException {
    Class<?> builderType = Class.forName(LoopbackAgent.TARGET);
    Class<?> serverType = Class.forName(LoopbackAgent.TARGET.replace(".netty.NettyServerBuilder", ".Server"));
    Object builder = builderType.getMethod("forPort", int.class).invoke(null, 0);
    Object server = builderType.getMethod("build").invoke(builder);
    serverType.getMethod("start").invoke(server);
    try {
      for (Object address : (List<?>) serverType.getMethod("getListenSockets").invoke(server)) {
        System.out.println(address);
      }
    } finally {
      serverType.getMethod("shutdownNow").invoke(server);
    }
  }
}
