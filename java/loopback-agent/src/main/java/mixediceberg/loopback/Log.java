package mixediceberg.loopback;

import java.lang.reflect.Method;

/**
 * The agent's log lines: through the JVM's SLF4J (Flink's log file) where it has one, else on
 * standard error. Looked up by reflection when a line is written (long after Flink set its
 * logging up), so that the agent depends on nothing but Byte Buddy and loads no logging framework
 * of its own into the JVM.
 */
final class Log {
  private static final String NAME = LoopbackAgent.class.getName();

  private Log() {}

  static void info(String message) {
    write("info", message);
  }

  static void warn(String message) {
    write("warn", message);
  }

  private static void write(String level, String message) {
    try {
      ClassLoader loader = ClassLoader.getSystemClassLoader();
      Class<?> factory = Class.forName("org.slf4j.LoggerFactory", true, loader);
      Class<?> type = Class.forName("org.slf4j.Logger", true, loader);
      Object logger = factory.getMethod("getLogger", String.class).invoke(null, NAME);
      Method write = type.getMethod(level, String.class);
      write.invoke(logger, message);
    } catch (ReflectiveOperationException | LinkageError e) {
      System.err.println(NAME + " " + level.toUpperCase() + ": " + message);
    }
  }
}
