package mixediceberg.loopback;

import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.returns;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.implementation.MethodCall;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.pool.TypePool;

/**
 * The rewrite itself, with Byte Buddy: {@code forPort(port)} of {@link LoopbackAgent#TARGET}
 * becomes {@code forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))}. A
 * class of its own, so that Byte Buddy is loaded only when the target class is.
 */
final class Rewrite {
  static final ElementMatcher.Junction<MethodDescription> FOR_PORT =
      named("forPort").and(isStatic()).and(takesArguments(int.class)).and(returns(named(LoopbackAgent.TARGET)));
  static final ElementMatcher.Junction<MethodDescription> FOR_ADDRESS =
      named("forAddress")
          .and(isStatic())
          .and(takesArguments(SocketAddress.class))
          .and(returns(named(LoopbackAgent.TARGET)));

  private Rewrite() {}

  /** The class file with {@code forPort(int)} rewritten, or null (unchanged, after a warning). */
  static byte[] bindLoopback(ClassLoader loader, byte[] classFile) {
    // The class as it loads, and whatever it refers to (its superclasses) from its class loader.
    ClassFileLocator locator =
        new ClassFileLocator.Compound(
            ClassFileLocator.Simple.of(LoopbackAgent.TARGET, classFile),
            loader != null ? ClassFileLocator.ForClassLoader.of(loader) : ClassFileLocator.ForClassLoader.ofBootLoader());
    TypePool pool = TypePool.Default.of(locator);
    TypeDescription type = pool.describe(LoopbackAgent.TARGET).resolve();
    if (type.getDeclaredMethods().filter(FOR_PORT).size() != 1
        || type.getDeclaredMethods().filter(FOR_ADDRESS).size() != 1) {
      LoopbackAgent.warnOnce(
          LoopbackAgent.TARGET + " has no static forPort(int) and forAddress(SocketAddress) returning it");
      return null;
    }
    try {
      return new ByteBuddy()
          .redefine(type, locator)
          .method(FOR_PORT)
          .intercept(
              MethodCall.invoke(FOR_ADDRESS)
                  .withMethodCall(
                      MethodCall.construct(InetSocketAddress.class.getConstructor(InetAddress.class, int.class))
                          .withMethodCall(MethodCall.invoke(InetAddress.class.getMethod("getLoopbackAddress")))
                          .withArgument(0)))
          .make(pool)
          .getBytes();
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException("the JDK lacks InetSocketAddress(InetAddress, int)", e);
    }
  }
}
