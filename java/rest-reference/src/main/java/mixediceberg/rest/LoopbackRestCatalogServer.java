/*
 * Iceberg's reference REST catalog (RESTCatalogAdapter + RESTCatalogServlet from iceberg-core's
 * test jar, the same pieces Iceberg's RESTCatalogServer serves), bound to one address.
 *
 * RESTCatalogServer (iceberg-open-api's test fixtures) listens on every interface of its port and
 * has no setting for the address; the tests and the benchmark want it on loopback only, like
 * every other service this project starts (tests/integration/test_loopback_only.py). So this
 * launcher builds the backend catalog from key=value arguments and serves it with Jetty on
 * rest.host (default 127.0.0.1) and rest.port. Compiled by scripts/jars/rest.sh; started by
 * tests/support/iceberg_rest_reference.py.
 *
 *   java -cp <.jars/rest/*>:<launcher jar> mixediceberg.rest.LoopbackRestCatalogServer \
 *       rest.port=8181 catalog.name=demo uri=jdbc:sqlite:/tmp/c.db warehouse=file:/tmp/w
 *
 * Arguments other than rest.* and catalog.name are the backend catalog's properties;
 * catalog-impl defaults to JdbcCatalog with jdbc.schema-version V1 (pyiceberg's SQL catalog
 * layout). The JVM exits on SIGTERM after Jetty stops (stop-at-shutdown).
 */
package mixediceberg.rest;

import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class LoopbackRestCatalogServer {
  private LoopbackRestCatalogServer() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> properties = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("expected key=value, found " + arg);
      }
      properties.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    String host = properties.getOrDefault("rest.host", "127.0.0.1");
    int port = Integer.parseInt(properties.getOrDefault("rest.port", "8181"));
    String name = properties.getOrDefault("catalog.name", "rest_backend");
    properties.keySet().removeIf(key -> key.startsWith("rest.") || key.equals("catalog.name"));
    properties.putIfAbsent("catalog-impl", "org.apache.iceberg.jdbc.JdbcCatalog");
    properties.putIfAbsent("jdbc.schema-version", "V1");

    Catalog catalog = CatalogUtil.buildIcebergCatalog(name, properties, new Configuration());
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.setStopAtShutdown(true);
    server.start();
    System.err.println("LoopbackRestCatalogServer: serving catalog " + name + " on http://" + host + ":" + connector.getLocalPort() + "/");
    server.join();
  }
}
