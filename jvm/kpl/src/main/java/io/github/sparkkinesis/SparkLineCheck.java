package io.github.sparkkinesis;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

/**
 * Checks, before anything Scala is loaded, that the spark-kinesis jar on the classpath was built for
 * the Spark line and Scala version this JVM runs. A mismatched jar otherwise fails deep inside the
 * first task with {@code NoClassDefFoundError: scala/$less$colon$less} or a {@code NoSuchMethodError}.
 *
 * <p>Java, in the Spark-agnostic KPL bundle, so it loads on any Spark and any Scala. Each Spark-line
 * jar carries a marker resource ({@link #MARKER}) naming its line, Scala version and coordinates.
 */
public final class SparkLineCheck {
  /** The resource every Spark-line jar carries (written by the build). */
  public static final String MARKER = "META-INF/spark-kinesis/line.properties";

  private SparkLineCheck() {}

  /** A line jar's marker: which Spark line and Scala it was built for, and where it was found. */
  static final class Marker {
    final String line;
    final String scala;
    final String group;
    final String version;
    final String location;

    Marker(String line, String scala, String group, String version, String location) {
      this.line = line;
      this.scala = scala;
      this.group = group;
      this.version = version;
      this.location = location;
    }

    String coordinates(String forLine, String forScala) {
      return group + ":spark-kinesis-" + forLine + "_" + forScala + ":" + version;
    }
  }

  /** Throws {@link IllegalStateException} naming the fix unless the classpath is right for this JVM. */
  public static void require() {
    String problem = problem();
    if (problem != null) throw new IllegalStateException(problem);
  }

  /** Null when this JVM's Spark and Scala match exactly one spark-kinesis line jar; else what is wrong. */
  public static String problem() {
    String spark = call("org.apache.spark.package", "SPARK_VERSION");
    String scala = call("scala.util.Properties", "versionNumberString");
    return problem(spark, scala, markers());
  }

  /** The Spark line a Spark version belongs to ("3.5", "4"), or null for one spark-kinesis does not support. */
  static String lineOf(String sparkVersion) {
    String[] p = sparkVersion.split("[.\\-]");
    int major = p.length > 0 ? parse(p[0]) : -1;
    int minor = p.length > 1 ? parse(p[1]) : -1;
    if (major == 3 && minor == 5) return "3.5";
    if (major == 4) return "4";
    return null;
  }

  static String problem(String spark, String scalaVersion, List<Marker> markers) {
    String scala = binary(scalaVersion);
    String group = markers.isEmpty() ? "io.github.spark-kinesis" : markers.get(0).group;
    String version = markers.isEmpty() ? "<version>" : markers.get(0).version;
    String line = lineOf(spark);
    String running = "This JVM runs Spark " + spark + " with Scala " + scala + ". ";
    if (line == null) {
      return running
          + "spark-kinesis supports Spark 3.5 (Scala 2.12 or 2.13) and Spark 4.x (Scala 2.13): run the query on "
          + "Spark 3.5 with " + group + ":spark-kinesis-3.5_" + scala + ":" + version + ", or on Spark 4 with "
          + group + ":spark-kinesis-4_2.13:" + version + ".";
    }
    String want = new Marker(line, scala, group, version, "").coordinates(line, scala);
    String fix = "Use " + want + " instead (--packages; from Python, spark_kinesis.configure(SparkSession.builder) "
        + "picks the jar for the installed pyspark).";
    if (line.equals("4") && !scala.equals("2.13")) {
      return running + "Spark 4 runs only on Scala 2.13; spark-kinesis has no jar for this build.";
    }
    if (markers.isEmpty()) {
      return running + "The spark-kinesis KPL bundle is on the classpath but no Spark-line jar is. " + fix;
    }
    if (markers.size() > 1) {
      StringBuilder found = new StringBuilder();
      for (Marker m : markers) {
        found.append("\n  ").append(m.coordinates(m.line, m.scala)).append(" at ").append(m.location);
      }
      return running + "More than one spark-kinesis Spark-line jar is on the classpath:" + found
          + "\nKeep only " + want + ".";
    }
    Marker m = markers.get(0);
    if (!m.line.equals(line) || !m.scala.equals(scala)) {
      return running + "The spark-kinesis jar on the classpath (" + m.coordinates(m.line, m.scala) + ", at "
          + m.location + ") is built for Spark " + (m.line.equals("4") ? "4.x" : m.line) + " with Scala "
          + m.scala + ". " + fix;
    }
    return null;
  }

  static String binary(String scalaVersion) {
    String[] p = scalaVersion.split("\\.");
    return p.length >= 2 ? p[0] + "." + p[1] : scalaVersion;
  }

  private static List<Marker> markers() {
    ClassLoader cl = Thread.currentThread().getContextClassLoader();
    if (cl == null) cl = SparkLineCheck.class.getClassLoader();
    List<Marker> out = new ArrayList<>();
    try {
      for (URL url : Collections.list(cl.getResources(MARKER))) {
        Properties p = new Properties();
        try (InputStream in = url.openStream()) {
          p.load(in);
        }
        String where = url.toString();
        int bang = where.indexOf("!/");
        out.add(new Marker(
            p.getProperty("line", "?"),
            p.getProperty("scala", "?"),
            p.getProperty("group", "io.github.spark-kinesis"),
            p.getProperty("version", "?"),
            bang > 0 ? where.substring(0, bang) : where));
      }
    } catch (IOException e) {
      throw new IllegalStateException("Reading " + MARKER + " from the classpath failed: " + e, e);
    }
    // A jar listed twice (spark.jars and the context loader's parent) is one jar.
    List<Marker> distinct = new ArrayList<>();
    for (Marker m : out) {
      boolean seen = false;
      for (Marker d : distinct) seen |= d.location.equals(m.location);
      if (!seen) distinct.add(m);
    }
    return distinct;
  }

  private static String call(String className, String method) {
    try {
      ClassLoader cl = Thread.currentThread().getContextClassLoader();
      Class<?> c = Class.forName(className, true, cl != null ? cl : SparkLineCheck.class.getClassLoader());
      return String.valueOf(c.getMethod(method).invoke(null));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "spark-kinesis runs inside a Spark JVM; " + className + "." + method + "() is not available: " + e, e);
    }
  }

  private static int parse(String s) {
    try {
      return Integer.parseInt(s);
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
