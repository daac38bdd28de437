package io.github.sparkkinesis

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

/** The facts resource: what Python and the tests need of the JVM's tables, without a JVM. The build runs `main` once
  * per line jar, after compiling it, and writes `META-INF/spark-kinesis/spark-kinesis.json` into the jar;
  * `bundlePython` copies it into the wheel (`spark_kinesis/jars/spark-kinesis.json`, read by `spark_kinesis._facts`).
  * The build adds what only it knows (the Spark lines of project/SparkLines.scala, the coordinates).
  *
  * Build code, in jvm/src/facts: compiled against each line's classes (hence this package, for the tables'
  * `private[sparkkinesis]`) and run by the build, never packaged into a jar.
  */
private[sparkkinesis] object Facts {

  /** `args(0)`: the file to write; `args(1)`: the build's members, a JSON object's inside (`"lines": [...], ...`). */
  def main(args: Array[String]): Unit = {
    val out = Paths.get(args(0))
    Files.createDirectories(out.getParent)
    Files.write(out, json(args(1)).getBytes(StandardCharsets.UTF_8))
  }

  def json(buildMembers: String): String = {
    import Json._
    val options = KinesisWriterOptions.table.map { o =>
      val default = o.default.map(d => if (o.kind == "string") str(d) else d).getOrElse("null")
      val allowed = o.allowed.map { a =>
        val rule = a match {
          case Allowed.AtLeast(min, _) => s""""min": $min"""
          case Allowed.OneOf(words)    => s""""oneOf": ${arr(words.map(str))}"""
          case Allowed.NonBlank        => """"nonBlank": true"""
        }
        s"""{"expected": ${str(a.expected)}, $rule}"""
      }
      s"""{"name": ${str(o.name)}, "type": ${str(o.kind)}, "default": $default, """ +
        s""""allowed": ${allowed.getOrElse("null")}, "secret": ${o.secret}, "doc": ${str(o.doc)}}"""
    }
    val totals = TaskTotals.every.map { t =>
      s"""{"name": ${str(t.name)}, "unit": ${str(t.unit)}, "description": ${str(t.description)}}"""
    }
    val platforms = Platforms.all.map { p =>
      s"""{"folder": ${str(p.folder)}, "daemon": ${str(p.daemon)}, "wheelTags": ${arr(p.wheelTags.map(str))}, """ +
        s""""shown": ${str(p.shown)}}"""
    }
    Seq(
      buildMembers,
      s""""daemonRoot": ${str(Platforms.ResourceRoot)}""",
      s""""windowsAdvice": ${str(Platforms.WindowsAdvice)}""",
      s""""platforms": ${arr(platforms, "\n  ")}""",
      s""""options": ${arr(options, "\n  ")}""",
      s""""kplSettings": ${arr(KplSettings.all.map(s => str(s.name)))}""",
      s""""kplSecrets": ${arr(KplSettings.all.filter(_.secret).map(s => str(s.name)))}""",
      s""""totals": ${arr(totals, "\n  ")}""",
      s""""producerMetrics": ${arr(ProducerMetrics.names.map(str))}""",
      s""""driverCheckHint": ${str(StreamCheck.DriverHint)}""",
      // The steady control-plane reads docs/benchmarks.md models: the KPL's default interval, a told daemon's re-read.
      s""""describeStreamSummaryIntervalMs": ${new shaded.kpl.KinesisProducerConfiguration().getDescribeStreamSummaryIntervalMs}""",
      s""""daemonStrategyRereadMs": ${Aggregation.DaemonStrategyRereadMs}"""
    ).mkString("{\n", ",\n", "\n}\n")
  }
}
