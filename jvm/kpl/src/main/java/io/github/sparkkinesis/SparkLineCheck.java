package io.github.sparkkinesis;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Checks, before anything Scala is loaded, that the spark-kinesis jar on the classpath was built for
 * the Spark line and Scala version this JVM runs. A mismatched jar otherwise fails deep inside the
 * first task with {@code NoClassDefFoundError: scala/$less$colon$less} or a {@code NoSuchMethodError}.
 *
 * <p>Java, in the Spark-agnostic KPL bundle, so it loads on any Spark and any Scala. Each Spark-line
 * jar carries a marker resource ({@link #MARKER}) naming its line, Scala version and coordinates; the
 * bundle carries the lines there are ({@link #LINES}), both written by the build from
 * project/SparkLines.scala.
 */
public final class SparkLineCheck {
  /** The resource every Spark-line jar carries (written by the build). */
  public static final String MARKER = "META-INF/spark-kinesis/line.properties";

  /** The Spark lines, in the bundle beside this class (written by the build). */
  static final String LINES = "META-INF/spark-kinesis/lines.properties";

  private SparkLineCheck() {}

  /** Every Spark line: its id ("3.5", "4") and artifact, the Scala binary versions it is built for, first the
   * default; and the coordinates' group and version. */
  static final class Lines {
    final String group;
    final String version;
    final Map<String, List<String>> scalas = new LinkedHashMap<>();
    final Map<String, String> artifacts = new LinkedHashMap<>();

    Lines(Properties p) {
      group = p.getProperty("group");
      version = p.getProperty("version");
      for (String line : p.getProperty("lines").split(",")) {
        scalas.put(line, Arrays.asList(p.getProperty(line + ".scala").split(",")));
        artifacts.put(line, p.getProperty(line + ".artifact"));
      }
    }

    /** The line a Spark version belongs to: its id, or the id and a "." or "-" further (SparkLines.lineOf). */
    String lineOf(String sparkVersion) {
      for (String line : scalas.keySet()) {
        if (sparkVersion.equals(line) || sparkVersion.startsWith(line + ".")
            || sparkVersion.startsWith(line + "-")) {
          return line;
        }
      }
      return null;
    }

    /** "3.5", or "4.x" for a line that is a whole major version. */
    static String shown(String line) {
      return line.contains(".") ? line : line + ".x";
    }

    /** "Spark 3.5 (Scala 2.12 or 2.13) and Spark 4.x (Scala 2.13)". */
    String supported() {
      List<String> out = new ArrayList<>();
      for (Map.Entry<String, List<String>> e : scalas.entrySet()) {
        out.add("Spark " + shown(e.getKey()) + " (Scala " + String.join(" or ", e.getValue()) + ")");
      }
      return String.join(" and ", out);
    }
  }

  private static Lines lines;

  static synchronized Lines lines() {
    if (lines == null) {
      Properties p = new Properties();
      try (InputStream in = SparkLineCheck.class.getClassLoader().getResourceAsStream(LINES)) {
        if (in == null) throw new IllegalStateException(LINES + " is missing beside " + SparkLineCheck.class);
        p.load(in);
      } catch (IOException e) {
        throw new IllegalStateException("Reading " + LINES + " failed: " + e, e);
      }
      lines = new Lines(p);
    }
    return lines;
  }

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

    /** Its artifact as its marker names it ("spark-kinesis-3.5_2.12"); null: as this bundle names its line's. */
    String artifact;

    String coordinates(String forLine, String forScala) {
      return group + ":" + lines().artifacts.get(forLine) + "_" + forScala + ":" + version;
    }

    /** The coordinates of this jar itself (a marker of another release may name a line this bundle does not know). */
    String own() {
      return artifact != null ? group + ":" + artifact + ":" + version : coordinates(line, scala);
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
    return lines().lineOf(sparkVersion);
  }

  static String problem(String spark, String scalaVersion, List<Marker> markers) {
    String scala = binary(scalaVersion);
    Lines all = lines();
    String group = markers.isEmpty() ? all.group : markers.get(0).group;
    String version = markers.isEmpty() ? all.version : markers.get(0).version;
    String line = lineOf(spark);
    String running = "This JVM runs Spark " + spark + " with Scala " + scala + ". ";
    if (line == null) {
      List<String> each = new ArrayList<>();
      for (Map.Entry<String, List<String>> e : all.scalas.entrySet()) {
        String s = e.getValue().contains(scala) ? scala : e.getValue().get(0);
        each.add("on Spark " + e.getKey() + " with " + new Marker(e.getKey(), s, group, version, "")
            .coordinates(e.getKey(), s));
      }
      return running + "spark-kinesis supports " + all.supported() + ": run the query "
          + String.join(", or ", each) + ".";
    }
    String want = new Marker(line, scala, group, version, "").coordinates(line, scala);
    String fix = "Use " + want + " instead (--packages; from Python, spark_kinesis.configure(SparkSession.builder) "
        + "picks the jar for the installed pyspark).";
    List<String> scalas = all.scalas.get(line);
    if (!scalas.contains(scala)) {
      return running + "Spark " + line + " runs only on Scala " + String.join(" or ", scalas)
          + "; spark-kinesis has no jar for this build.";
    }
    if (markers.isEmpty()) {
      return running + "The spark-kinesis KPL bundle is on the classpath but no Spark-line jar is. " + fix;
    }
    if (markers.size() > 1) {
      StringBuilder found = new StringBuilder();
      for (Marker m : markers) {
        found.append("\n  ").append(m.own()).append(" at ").append(m.location);
      }
      return running + "More than one spark-kinesis Spark-line jar is on the classpath:" + found
          + "\nKeep only " + want + ".";
    }
    Marker m = markers.get(0);
    if (!m.line.equals(line) || !m.scala.equals(scala)) {
      return running + "The spark-kinesis jar on the classpath (" + m.own() + ", at "
          + m.location + ") is built for Spark " + Lines.shown(m.line) + " with Scala "
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
        Marker m = new Marker(
            p.getProperty("line", "?"),
            p.getProperty("scala", "?"),
            p.getProperty("group", lines().group),
            p.getProperty("version", "?"),
            bang > 0 ? where.substring(0, bang) : where);
        m.artifact = p.getProperty("artifact");
        out.add(m);
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
}
