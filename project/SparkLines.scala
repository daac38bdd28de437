import sbt._

/** A Spark line spark-kinesis builds for: its artifact suffix, the Spark and Scala it compiles against, and the
  * bytecode level it emits. Each line compiles against the oldest Spark of the line (and that Spark's Scala), so the
  * jar runs on every later release of the line.
  */
final case class SparkLine(line: String, spark: String, scala: String, javaRelease: String) {
  def scalaBinary: String = CrossVersion.binaryScalaVersion(scala)
  def id: String = s"spark${line.replace(".", "")}_${scalaBinary.replace(".", "")}" // spark35_212
  def artifact: String = s"spark-kinesis-$line"
}

object SparkLines {

  /** Each line's id and the Spark, Scala and bytecode level it compiles against, by default; a line's first Scala is
    * the one pip's pyspark of that line runs (Python's `coordinates` picks it when the Scala is not known).
    */
  private val defaults = Seq(
    ("3.5", "3.5.0", "2.12.18", "8"),
    ("3.5", "3.5.0", "2.13.8", "8"),
    ("4", "4.0.1", "2.13.16", "17")
  )

  /** The line a Spark version belongs to (its id, or the id and a "." or "-" further: 3.5.9, 4.1.2); the build refuses
    * others. SparkLineCheck.lineOf (Java) and spark_kinesis._jar.spark_line (Python) apply the same rule to these ids.
    */
  def lineOf(spark: String): String =
    defaults
      .map(_._1)
      .distinct
      .find(l => spark == l || spark.startsWith(l + ".") || spark.startsWith(l + "-"))
      .getOrElse {
        sys.error(
          s"-Dspark.version=$spark: spark-kinesis builds for Spark ${defaults.map(_._1).distinct.mkString(", ")} only"
        )
      }

  /** `-Dspark.version=X` compiles X's line(s) against X (for example 4.1.2, or 3.5.9). */
  private val sparkOverride = sys.props.get("spark.version").map { v => lineOf(v); v }

  private def line(l: String, spark: String, scala: String, javaRelease: String): SparkLine =
    SparkLine(l, sparkOverride.filter(lineOf(_) == l).getOrElse(spark), scala, javaRelease)

  // Spark 3.5 clusters still run Java 8 (Databricks 15.4 LTS by default): the 3.5 lines emit Java 8 bytecode.
  val Seq(spark35_212, spark35_213, spark4_213) = defaults.map { case (l, spark, scala, release) =>
    line(l, spark, scala, release)
  }
  val all: Seq[SparkLine] = Seq(spark35_212, spark35_213, spark4_213)

  /** The Spark lines, each with its Scala binary versions in order, as the facts resource's members (JSON; Python reads
    * them) and as the KPL bundle's `META-INF/spark-kinesis/lines.properties` (SparkLineCheck reads it).
    */
  private def grouped: Seq[(SparkLine, Seq[String])] =
    all.groupBy(_.line).toSeq.map { case (_, ls) => ls.head -> ls.map(_.scalaBinary) }.sortBy(g => all.indexOf(g._1))

  def json(group: String, version: String): String = {
    def q(s: String) = "\"" + s + "\""
    val lines = grouped.map { case (l, scalas) =>
      s"""{"line": ${q(l.line)}, "artifact": ${q(l.artifact)}, "spark": ${q(l.spark)}, """ +
        s""""scala": ${scalas.map(q).mkString("[", ", ", "]")}}"""
    }
    s""""group": ${q(group)},\n"version": ${q(version)},\n"lines": ${lines.mkString("[\n  ", ",\n  ", "\n]")}"""
  }

  def properties(group: String, version: String): String =
    (Seq(s"group=$group", s"version=$version", s"lines=${grouped.map(_._1.line).mkString(",")}") ++ grouped.flatMap {
      case (l, scalas) => Seq(s"${l.line}.artifact=${l.artifact}", s"${l.line}.scala=${scalas.mkString(",")}")
    }).mkString("", "\n", "\n")
}
