// spark-kinesis: a Spark Structured Streaming ForeachWriter over the Kinesis Producer Library.
// Cross-build against another Spark with -Dspark.version=4.x.y (Scala follows Spark's).

val sparkVersion = sys.props.getOrElse("spark.version", "4.0.1")
// One version source: the Python package's _version.py (PEP 440 ".devN" = Maven "-SNAPSHOT").
val projectVersion = {
  val src = IO.read(file("python/spark_kinesis/_version.py"))
  val v = "__version__ = \"([^\"]+)\"".r.findFirstMatchIn(src).map(_.group(1)).getOrElse(sys.error("no __version__"))
  v.replaceAll("\\.dev\\d*$", "-SNAPSHOT")
}
val kplVersion = "1.0.7"
val gsrVersion = "1.1.24" // the version KPL 1.0.7 declares

ThisBuild / organization := "io.github.spark-kinesis"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := "2.13.16"
ThisBuild / licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0"))
ThisBuild / homepage := Some(url("https://github.com/spark-kinesis/spark-kinesis"))

// The KPL POM drags the Glue schema-registry serde and its tree (Kafka, Kotlin, a Scala 2.12
// library, Avro, wire, ...). The writer never sends GSR schemas, so that tree is excluded; only
// the two GSR jars whose types the KPL's constructor links against come along, without their
// dependencies (e2e tests prove the KPL starts and delivers). The SDK's async Netty client is
// unused too (STS goes through the sync Apache client) and would clash with Spark's Netty.
val kplExclusions = Seq(
  ExclusionRule("software.amazon.glue"),
  ExclusionRule("software.amazon.awssdk", "netty-nio-client"),
  ExclusionRule("org.projectlombok")
)

lazy val root = (project in file("."))
  .aggregate(sparkKinesis)
  .settings(publish / skip := true, name := "spark-kinesis-root")

lazy val sparkKinesis = (project in file("jvm"))
  .settings(
    name := "spark-kinesis",
    autoScalaLibrary := false,
    moduleName := "spark-kinesis",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17", "-Xlint:-unused,_"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      ("software.amazon.kinesis" % "amazon-kinesis-producer" % kplVersion).excludeAll(kplExclusions: _*),
      ("software.amazon.glue" % "schema-registry-serde" % gsrVersion).excludeAll(ExclusionRule("*", "*")),
      ("software.amazon.glue" % "schema-registry-common" % gsrVersion).excludeAll(ExclusionRule("*", "*")),
      // Spark brings Scala; the POM must not put a second scala-library on --packages classpaths.
      "org.scala-lang" % "scala-library" % scalaVersion.value % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    Test / fork := true,
    Test / javaOptions ++= Seq("-Xmx1g"),
    Test / parallelExecution := false,
    // Assembly: KPL + SDK + what they need, never Spark or Scala; clashing packages relocated.
    assembly / assemblyJarName := s"spark-kinesis-assembly_${scalaBinaryVersion.value}-${version.value}.jar",
    assembly / assemblyOption ~= (_.withIncludeScala(false)),
    assembly / test := {},
    assembly / assemblyShadeRules := Seq(
      ShadeRule.rename("com.google.common.**" -> "io.github.sparkkinesis.shaded.guava.@1").inAll,
      ShadeRule.rename("com.google.thirdparty.**" -> "io.github.sparkkinesis.shaded.guava.thirdparty.@1").inAll,
      ShadeRule.rename("com.google.protobuf.**" -> "io.github.sparkkinesis.shaded.protobuf.@1").inAll,
      ShadeRule.rename("com.fasterxml.jackson.**" -> "io.github.sparkkinesis.shaded.jackson.@1").inAll,
      ShadeRule.rename("org.apache.commons.io.**" -> "io.github.sparkkinesis.shaded.commons.io.@1").inAll,
      ShadeRule.rename("org.apache.commons.lang3.**" -> "io.github.sparkkinesis.shaded.commons.lang3.@1").inAll,
      ShadeRule.rename("org.apache.http.**" -> "io.github.sparkkinesis.shaded.http.@1").inAll,
      ShadeRule.rename("org.apache.commons.codec.**" -> "io.github.sparkkinesis.shaded.commons.codec.@1").inAll,
      ShadeRule.rename("org.apache.commons.logging.**" -> "io.github.sparkkinesis.shaded.commons.logging.@1").inAll,
      ShadeRule.rename("org.reactivestreams.**" -> "io.github.sparkkinesis.shaded.reactivestreams.@1").inAll,
      ShadeRule.rename("com.amazonaws.services.schemaregistry.**" -> "io.github.sparkkinesis.shaded.gsr.@1").inAll
    ),
    assembly / assemblyExcludedJars := {
      val cp = (assembly / fullClasspath).value
      // Spark provides logging; annotation-only jars are dead weight at run time.
      val unwanted = Seq("slf4j-", "log4j-", "checker-qual", "error_prone_annotations", "j2objc-annotations", "jsr305")
      cp.filter(f => unwanted.exists(f.data.getName.startsWith))
    },
    assembly / assemblyMergeStrategy := {
      // Multi-release variants escape relocation; the manifest that would enable them is dropped anyway.
      case PathList("META-INF", "versions", _ @_*)              => MergeStrategy.discard
      case "module-info.class"                                  => MergeStrategy.discard
      case PathList("META-INF", "io.netty.versions.properties") => MergeStrategy.discard
      case PathList("META-INF", xs @ _*)
          if xs.lastOption.exists(n => n.endsWith(".SF") || n.endsWith(".DSA") || n.endsWith(".RSA")) =>
        MergeStrategy.discard
      case PathList("META-INF", "services", _ @_*) => MergeStrategy.concat
      case PathList("META-INF", "MANIFEST.MF")     => MergeStrategy.discard
      case PathList("META-INF", _ @_*)             => MergeStrategy.first
      case x if x.endsWith(".proto")               => MergeStrategy.first
      case x if x.endsWith("codegen-resources/service-2.json") || x.contains("codegen-resources") => MergeStrategy.first
      case x => MergeStrategy.defaultMergeStrategy(x)
    },
    pomExtra :=
      <scm><url>https://github.com/spark-kinesis/spark-kinesis</url></scm>
      <developers><developer><id>spark-kinesis</id><name>spark-kinesis authors</name></developer></developers>
  )

// Benchmarks (not aggregated, never published): JMH on the writer's hot path, and BareKplLoop, the
// same records pushed straight into a KinesisProducer. `bench/writeClasspath` writes the runtime
// classpath to bench/jvm/target/classpath.txt so a harness can start BareKplLoop without sbt.
lazy val writeClasspath = taskKey[File]("Writes the runtime classpath to target/classpath.txt")

lazy val bench = (project in file("bench/jvm"))
  .dependsOn(sparkKinesis)
  .enablePlugins(JmhPlugin)
  .settings(
    name := "spark-kinesis-bench",
    publish / skip := true,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    libraryDependencies += "org.apache.spark" %% "spark-sql" % sparkVersion,
    writeClasspath := {
      val out = target.value / "classpath.txt"
      IO.write(out, (Runtime / fullClasspath).value.files.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator))
      out
    }
  )
