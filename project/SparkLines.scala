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

  /** The line a Spark version belongs to; the build refuses others. */
  def lineOf(spark: String): String = spark.split('.').toList match {
    case "3" :: "5" :: _ => "3.5"
    case "4" :: _        => "4"
    case _               => sys.error(s"-Dspark.version=$spark: spark-kinesis builds for Spark 3.5.x and 4.x only")
  }

  /** `-Dspark.version=X` compiles X's line(s) against X (for example 4.1.2, or 3.5.9). */
  private val sparkOverride = sys.props.get("spark.version").map { v => lineOf(v); v }

  private def line(l: String, spark: String, scala: String, javaRelease: String): SparkLine =
    SparkLine(l, sparkOverride.filter(lineOf(_) == l).getOrElse(spark), scala, javaRelease)

  // Spark 3.5 clusters still run Java 8 (Databricks 15.4 LTS by default): the 3.5 lines emit Java 8 bytecode.
  val spark35_212: SparkLine = line("3.5", "3.5.0", "2.12.18", "8")
  val spark35_213: SparkLine = line("3.5", "3.5.0", "2.13.8", "8")
  val spark4_213: SparkLine = line("4", "4.0.1", "2.13.16", "17")
  val all: Seq[SparkLine] = Seq(spark35_212, spark35_213, spark4_213)
}
