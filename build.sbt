// spark-kinesis: one source tree, built for each Spark line it supports.
//
// Artifacts (docs/development.md, "Artifacts"):
//   spark-kinesis-kpl          the KPL, the AWS SDK and the KPL's native daemons, relocated; no Scala, no Spark,
//                              Java 8 bytecode. The same bytes serve every Spark line (the wheel carries it once).
//   spark-kinesis-<line>_<scala>  our Scala layer, compiled per line against that bundle: 3.5_2.12, 3.5_2.13, 4_2.13.
//
// `-Dspark.version=X` compiles the lines of X's Spark line against X (for example 4.1.2, or 3.5.9): SparkLines.scala.

import sbtassembly.Assembly.{JarEntry, Project => AssemblyProject}

// One version source: the Python package's _version.py (PEP 440 ".devN" = Maven "-SNAPSHOT").
val projectVersion = {
  val src = IO.read(file("python/spark_kinesis/_version.py"))
  val v = "__version__ = \"([^\"]+)\"".r.findFirstMatchIn(src).map(_.group(1)).getOrElse(sys.error("no __version__"))
  v.replaceAll("\\.dev\\d*$", "-SNAPSHOT")
}
val kplVersion = "1.1.1"
// The AWS SDK the bundle carries (relocated, like all of it), every module at one version: the Kinesis client (the
// writer's own aggregation reads shard maps and RecordDistributionStrategy, which SDKs before 2.55.4 do not know) and the
// KPL's STS and CloudWatch.
val awsSdkVersion = "2.57.8"
val gsrVersion = "1.1.24" // the version KPL 1.1.1 declares
// The KCL the tests read aggregates with: the unit tests here and the tests' consumer (tools/kcl/pom.xml, its one home).
val kclVersion = "<kcl.version>([^<]+)</kcl.version>".r
  .findFirstMatchIn(IO.read(file("tools/kcl/pom.xml")))
  .map(_.group(1))
  .getOrElse(sys.error("tools/kcl/pom.xml names no kcl.version"))

val lines = SparkLines.all // project/SparkLines.scala

ThisBuild / organization := "io.github.spark-kinesis"
ThisBuild / version := projectVersion
ThisBuild / scalaVersion := lines.last.scala
ThisBuild / licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0"))
ThisBuild / homepage := Some(url("https://github.com/spark-kinesis/spark-kinesis"))
// What Maven Central requires of every POM (name, description, url, licenses, developers, scm); `make release-check`
// (tools/release_check.py) fails a staged POM that lacks one.
ThisBuild / scmInfo := Some(
  ScmInfo(
    url("https://github.com/spark-kinesis/spark-kinesis"),
    "scm:git:https://github.com/spark-kinesis/spark-kinesis.git"
  )
)
ThisBuild / developers := List(
  Developer("spark-kinesis", "spark-kinesis authors", "", url("https://github.com/spark-kinesis/spark-kinesis"))
)
// A release stages here (publishSigned: target/sona-staging), and `sonaRelease` uploads that bundle to the Central
// Portal (docs/development.md, "Releasing"). `make jar` publishes to the local Maven repository instead (publishM2).
ThisBuild / publishTo := localStaging.value
ThisBuild / publishMavenStyle := true

// API docs jars only for a release (-Dpublish.docs=true): scaladoc of three lines is a minute of every `make test`.
// Central requires a javadoc jar beside every jar: the release builds them (tools/release_check.py passes the flag).
// Set in each project (publishedDocs), not for ThisBuild: Test delegates to Compile, and at ThisBuild that published the
// test classes' docs as a `tests-javadoc` jar too.
val publishedDocs = Seq(
  Compile / packageDoc / publishArtifact := sys.props.get("publish.docs").contains("true"),
  Test / packageDoc / publishArtifact := false
)

// LICENSE and the project's NOTICE go into every jar's META-INF.
val legalFiles = Def.setting(Seq(file("LICENSE") -> "META-INF/LICENSE", file("NOTICE") -> "META-INF/NOTICE"))

// ---------------------------------------------------------------------------------------------------------------
// The KPL bundle.

// The KPL POM drags the Glue schema-registry serde and its tree (Kafka, Kotlin, a Scala 2.12 library, Avro, wire,
// ...). The writer never sends GSR schemas, so that tree is excluded; only the two GSR jars whose types the KPL's
// constructor links against come along, without their dependencies (e2e tests prove the KPL starts and delivers).
// The SDK's async Netty client is unused too (STS goes through the sync Apache client) and would clash with Spark's.
val kplExclusions = Seq(
  ExclusionRule("software.amazon.glue"),
  ExclusionRule("software.amazon.awssdk", "netty-nio-client"),
  ExclusionRule("org.projectlombok")
)

// What the bundle is made of, kept out of Compile so the published POM names no dependency (all of it is inside).
val Bundled = config("bundled").hide

// Jars of that tree left out: Spark provides logging; annotation-only jars are dead weight at run time.
val notBundled = Seq("slf4j-", "log4j-", "checker-qual", "error_prone_annotations", "j2objc-annotations", "jsr305")

// The KPL's own jar among the bundled ones: its daemons go around the assembly (KplResources).
lazy val kplJar = taskKey[File]("The KPL's jar among the bundled ones")

/** Notices and licences of the bundled jars: each distinct text once, the project's own first. */
val distinctTexts = CustomMergeStrategy("distinct-texts") { deps =>
  val ordered = deps.sortBy { case _: AssemblyProject => 0; case _ => 1 }
  def text(d: sbtassembly.Assembly.Dependency): String = sbt.io.Using.bufferedInputStream(d.stream())(IO.readStream(_))
  val texts = ordered
    .map(d => text(d).replace("\r", "").linesIterator.map(_.replaceAll("\\s+$", "")).mkString("\n").trim)
    .distinct
  val bytes = texts.filter(_.nonEmpty).mkString("", "\n\n" + "-" * 80 + "\n\n", "\n").getBytes(IO.utf8)
  Right(Vector(JarEntry(deps.head.target, () => new java.io.ByteArrayInputStream(bytes))))
}

lazy val kpl = (project in file("jvm/kpl"))
  .configs(Bundled)
  .settings(
    publishedDocs,
    name := "spark-kinesis-kpl",
    description := "The Kinesis Producer Library, the AWS SDK and the KPL's native daemons, relocated for " +
      "spark-kinesis (no Scala, no Spark; Java 8)",
    crossPaths := false,
    autoScalaLibrary := false,
    javacOptions ++= Seq("--release", "8", "-Xlint:all", "-Xlint:-options"),
    Compile / doc / javacOptions := Seq("--release", "8"),
    libraryDependencies ++= Seq(
      ("software.amazon.kinesis" % "amazon-kinesis-producer" % kplVersion % Bundled).excludeAll(kplExclusions: _*),
      ("software.amazon.awssdk" % "kinesis" % awsSdkVersion % Bundled).excludeAll(kplExclusions: _*),
      ("software.amazon.glue" % "schema-registry-serde" % gsrVersion % Bundled).excludeAll(ExclusionRule("*", "*")),
      ("software.amazon.glue" % "schema-registry-common" % gsrVersion % Bundled).excludeAll(ExclusionRule("*", "*"))
    ),
    // Every SDK module of the tree at awsSdkVersion (the KPL declares an older one).
    dependencyOverrides ++= Seq(
      "annotations",
      "apache-client",
      "auth",
      "aws-core",
      "aws-query-protocol",
      "checksums",
      "checksums-spi",
      "cloudwatch",
      "endpoints-spi",
      "http-auth",
      "http-auth-aws",
      "http-auth-aws-eventstream",
      "http-auth-spi",
      "http-client-spi",
      "identity-spi",
      "json-utils",
      "metrics-spi",
      "profiles",
      "protocol-core",
      "regions",
      "retries",
      "retries-spi",
      "sdk-core",
      "sts",
      "third-party-jackson-core",
      "utils"
    ).map(m => "software.amazon.awssdk" % m % awsSdkVersion),
    Compile / resourceGenerators += Def.task {
      legalFiles.value.map { case (src, path) =>
        val out = (Compile / resourceManaged).value / path; IO.copyFile(src, out); out
      }
    },
    // The Spark lines, for SparkLineCheck (Java: properties, which it reads without a JSON library).
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "META-INF" / "spark-kinesis" / "lines.properties"
      IO.write(out, SparkLines.properties(organization.value, version.value))
      Seq(out)
    },
    // What the bundle carries, from the resolved dependencies (docs/bundle.md is a copy, checked by a test).
    Compile / resourceGenerators += Def.task {
      val modules = update.value
        .configuration(Bundled)
        .toSeq
        .flatMap(_.modules)
        .filterNot(_.evicted)
        .filter(_.artifacts.exists { case (_, f) => !notBundled.exists(f.getName.startsWith) })
        .map(m => (m.module.organization, m.module.name, m.module.revision))
        .distinct
        .sorted
      val out = (Compile / resourceManaged).value / "META-INF" / "spark-kinesis" / "BUNDLED.md"
      IO.write(
        out,
        s"| group | artifact | version |\n|---|---|---|\n" +
          modules.map { case (g, a, v) => s"| $g | $a | $v |" }.mkString("", "\n", "\n")
      )
      Seq(out)
    },
    kplJar := {
      val bundled = Classpaths.managedJars(Bundled, classpathTypes.value, update.value)
      bundled.filter(_.get(moduleID.key).exists(_.name == "amazon-kinesis-producer")) match {
        case Seq(j) => j.data
        case js     => sys.error(s"expected the KPL's jar once among the bundled jars, found ${js.size}")
      }
    },
    // The KPL's jar goes in without its daemons; packageBin adds them to the assembly (KplResources).
    assembly / fullClasspath := {
      val bundled = Classpaths.managedJars(Bundled, classpathTypes.value, update.value)
      val kpl = kplJar.value
      val withoutDaemons = target.value / "kpl-without-daemons" / kpl.getName
      Attributed.blankSeq((Compile / products).value) ++ bundled
        .filterNot(f => notBundled.exists(f.data.getName.startsWith))
        .map(j => if (j.data == kpl) j.map(KplResources.withoutDaemons(_, withoutDaemons)) else j)
    },
    assembly / assemblyJarName := s"${name.value}-${version.value}-without-daemons.jar",
    assembly / assemblyOption ~= (_.withIncludeScala(false)),
    // Everything third-party is relocated under io.github.sparkkinesis.shaded: Spark platforms put their own AWS SDK
    // (EMR, Glue, Databricks, hadoop-aws), Guava, Jackson, protobuf and HttpClient on the JVM's class path, and EMR also
    // an older KPL (inside the awslabs Kinesis connector). Unrelocated, whichever copy comes first wins (docs/bundle.md).
    // jarjar renames classes, the string constants naming them, resource paths under a relocated package and the
    // service files (their names and the class names inside); KplResources moves what the KPL finds by a path of its own.
    assembly / assemblyShadeRules := Seq(
      "com.google.common" -> "guava",
      "com.google.thirdparty" -> "guava.thirdparty",
      "com.google.protobuf" -> "protobuf",
      "com.fasterxml.jackson" -> "jackson",
      "org.apache.commons.io" -> "commons.io",
      "org.apache.commons.lang3" -> "commons.lang3",
      "org.apache.http" -> "http",
      "org.apache.hc" -> "hc",
      "org.apache.commons.codec" -> "commons.codec",
      "org.apache.commons.logging" -> "commons.logging",
      "org.reactivestreams" -> "reactivestreams",
      "org.jspecify" -> "jspecify",
      "com.amazonaws.services.schemaregistry" -> "gsr",
      "software.amazon.awssdk" -> "awssdk",
      "software.amazon.eventstream" -> "eventstream",
      "software.amazon.kinesis.producer" -> "kpl"
    ).map { case (from, to) => ShadeRule.rename(s"$from.**" -> s"${KplResources.ShadedPrefix}.$to.@1").inAll },
    assembly / assemblyMergeStrategy := {
      // Multi-release variants escape relocation (and are not Java 8); the manifest enabling them is dropped anyway.
      case PathList("META-INF", "versions", _ @_*)              => MergeStrategy.discard
      case "module-info.class"                                  => MergeStrategy.discard
      case PathList("META-INF", "io.netty.versions.properties") => MergeStrategy.discard
      case PathList("META-INF", xs @ _*)
          if xs.lastOption.exists(n => n.endsWith(".SF") || n.endsWith(".DSA") || n.endsWith(".RSA")) =>
        MergeStrategy.discard
      case PathList("META-INF", n) if n.toUpperCase.startsWith("NOTICE") || n.toUpperCase.startsWith("LICENSE") =>
        distinctTexts
      case PathList("META-INF", "services", _ @_*)      => MergeStrategy.concat
      case PathList("META-INF", "MANIFEST.MF")          => MergeStrategy.discard
      case PathList("META-INF", "spark-kinesis", _ @_*) => MergeStrategy.first
      // Build metadata of the bundled jars (Maven coordinates, GraalVM and ProGuard hints, the SDK's per-module
      // version files) under their original names: read by no code at run time, and it would name packages we relocated.
      case PathList("META-INF", d, _ @_*)
          if Set("maven", "native-image", "proguard", "software.amazon.awssdk").contains(d) =>
        MergeStrategy.discard
      case PathList("META-INF", "DEPENDENCIES") => MergeStrategy.discard
      case PathList("META-INF", _ @_*)          => MergeStrategy.first
      // The KPL's daemons and CA certificates, at paths of our own; its classes look there (KplResources).
      case x if KplResources.movedResource(x).isDefined                          => KplResources.moveResource
      case x if x.startsWith(KplResources.ShadedKplPath) && x.endsWith(".class") => KplResources.rewriteClass
      // Sources, schemas and test types the Glue schema-registry and protobuf jars carry at the root: no code of the
      // writer's path loads them (it never sends GSR schemas), and they would sit unrelocated beside a platform's.
      case x if x.endsWith(".proto") || x.endsWith(".java") || x.endsWith(".java.vm")   => MergeStrategy.discard
      case PathList(d, _ @_*) if Set("additionalTypes", "metadata", "java").contains(d) => MergeStrategy.discard
      case "mime.types" | "Name"                                                        => MergeStrategy.discard
      case x if x.contains("codegen-resources")                                         => MergeStrategy.first
      case x => MergeStrategy.defaultMergeStrategy(x)
    },
    assembly / test := {},
    // The bundle (the assembly, then the daemons) is the artifact: the line projects compile against its relocated
    // classes (sbt-assembly refuses exportJars, hence exportedProducts), and --packages fetches it whole.
    Compile / packageBin :=
      KplResources.withDaemons(assembly.value, kplJar.value, target.value / s"${name.value}-${version.value}.jar"),
    Compile / exportedProducts := Seq(Attributed.blank((Compile / packageBin).value)),
    Runtime / exportedProducts := (Compile / exportedProducts).value
  )

// ---------------------------------------------------------------------------------------------------------------
// One project per Spark line, all compiling jvm/src plus that line's shim folders:
//   jvm/src/main/scala-2.12 | scala-2.13   Scala-version differences
//   jvm/src/main/spark-3.5  | spark-4      Spark-API differences

// Build code of a line (jvm/src/facts: `Facts`, which writes the facts resource): compiled against the line's classes
// and run by the build, in a configuration no jar or POM includes.
val FactsGen = config("facts").hide

// sbt's compiler bridge for a line's Scala version: none is published for Scala 2.12, nor for 2.13 before 2.13.12, so
// the first compile of each on a machine new to sbt compiles one (into ~/.sbt) before the line's own sources.
lazy val compilerBridge =
  taskKey[Option[File]]("sbt's compiler bridge for this project's Scala version, compiled if new")

def sparkLineProject(l: SparkLine): Project =
  Project(l.id, file("jvm") / "lines" / l.id)
    .dependsOn(kpl)
    .configs(FactsGen)
    .settings(
      inConfig(FactsGen)(Defaults.configSettings) ++ org.scalafmt.sbt.ScalafmtPlugin.scalafmtConfigSettings(FactsGen)
    )
    .settings(
      publishedDocs,
      name := l.artifact,
      description := s"Spark ${l.line} (Scala ${l.scalaBinary}) writer to Amazon Kinesis Data Streams through the " +
        "KPL, with a bounded queue",
      moduleName := l.artifact,
      scalaVersion := l.scala,
      autoScalaLibrary := false,
      Compile / unmanagedSourceDirectories := Seq("java", "scala", s"scala-${l.scalaBinary}", s"spark-${l.line}")
        .map(d => (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / d),
      Compile / unmanagedResourceDirectories := Seq(
        (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / "resources"
      ),
      Test / unmanagedSourceDirectories := Seq((ThisBuild / baseDirectory).value / "jvm" / "src" / "test" / "scala"),
      Test / unmanagedResourceDirectories := Nil,
      scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", l.javaRelease, "-Xlint:-unused,_"),
      javacOptions ++= Seq("--release", l.javaRelease),
      libraryDependencies ++= Seq(
        "org.apache.spark" %% "spark-sql" % l.spark % Provided,
        // Spark brings Scala; the POM must not put a second scala-library on --packages classpaths.
        "org.scala-lang" % "scala-library" % l.scala % Provided,
        "org.scalatest" %% "scalatest" % "3.2.19" % Test,
        // The KCL's own deaggregation (with its hash-range check) reads the writer's aggregates in unit tests: the
        // jar alone, with what its AggregatorUtil links against.
        ("software.amazon.kinesis" % "amazon-kinesis-client" % kclVersion % Test).intransitive(),
        "com.google.protobuf" % "protobuf-java" % "4.27.5" % Test,
        "javax.xml.bind" % "jaxb-api" % "2.3.1" % Test
      ),
      // The marker SparkLineCheck reads, and the legal files.
      Compile / resourceGenerators += Def.task {
        val dir = (Compile / resourceManaged).value
        val marker = dir / "META-INF" / "spark-kinesis" / "line.properties"
        IO.write(
          marker,
          s"line=${l.line}\nscala=${l.scalaBinary}\nspark=${l.spark}\ngroup=${organization.value}\n" +
            s"artifact=${l.artifact}_${l.scalaBinary}\nversion=${version.value}\n"
        )
        marker +: legalFiles.value.map { case (src, path) => val out = dir / path; IO.copyFile(src, out); out }
      },
      // Facts sees the line's classes and their dependencies, not Compile's fullClasspath, which holds the resources
      // it writes.
      FactsGen / unmanagedSourceDirectories := Seq(
        (ThisBuild / baseDirectory).value / "jvm" / "src" / "facts" / "scala"
      ),
      FactsGen / unmanagedResourceDirectories := Nil,
      FactsGen / dependencyClasspath := {
        val classes = { (Compile / compile).value; (Compile / classDirectory).value }
        Attributed.blank(classes) +: (Compile / dependencyClasspath).value
      },
      // The facts resource (io.github.sparkkinesis.Facts): the option table and the task totals from the compiled
      // classes, the Spark lines from SparkLines.scala.
      Compile / resourceGenerators += Def.task {
        val out = (Compile / resourceManaged).value / "META-INF" / "spark-kinesis" / "spark-kinesis.json"
        val classpath = (FactsGen / fullClasspath).value.files
        val members = SparkLines.json(organization.value, version.value)
        val javaBin = javaHome.value.map(h => (h / "bin" / "java").getPath).getOrElse("java")
        val cp = (classpath ++ scalaInstance.value.libraryJars).map(_.getPath).mkString(java.io.File.pathSeparator)
        val exit =
          scala.sys.process.Process(Seq(javaBin, "-cp", cp, "io.github.sparkkinesis.Facts", out.getPath, members)).!
        if (exit != 0) sys.error(s"io.github.sparkkinesis.Facts exited $exit")
        Seq(out)
      },
      // Fetched (or, on a machine new to sbt, compiled) before the line's compile needs it, beside the KPL bundle's
      // assembly that the compile waits for anyway.
      Compile / compile := (Compile / compile).dependsOn(compilerBridge).value,
      compilerBridge := {
        (Compile / compilers).value.scalac match {
          case c: sbt.internal.inc.AnalyzingCompiler =>
            Some(c.provider.fetchCompiledBridge(c.scalaInstance, streams.value.log))
          case _ => None
        }
      },
      Test / fork := true,
      // C1 only: a test JVM lives ~20 s, too short for C2's compiles to pay for the cores they take.
      Test / javaOptions ++= Seq("-Xmx1g", "-XX:TieredStopAtLevel=1"),
      Test / parallelExecution := false
    )

lazy val spark35_212 = sparkLineProject(SparkLines.spark35_212)
lazy val spark35_213 = sparkLineProject(SparkLines.spark35_213)
lazy val spark4_213 = sparkLineProject(SparkLines.spark4_213)
lazy val lineProjects = Seq(spark35_212, spark35_213, spark4_213)

// `bundlePython` puts the KPL bundle, every line's jar and the bundle's aggregated NOTICE into the Python package.
lazy val bundlePython = taskKey[Seq[File]]("Copies the jars into python/spark_kinesis/jars (the wheel carries them)")

// Replaces the jars in python/spark_kinesis/jars with the KPL bundle and the jars of the line projects `lines` selects;
// beside them, every notice the bundle carries (its META-INF/NOTICE) and what it carries, and the facts resource, the
// same in every line jar (Python's option table, task totals and Spark lines).
def bundleIntoPython(lines: ScopeFilter): Def.Initialize[Task[Seq[File]]] = Def.task {
  val bundle = (kpl / Compile / packageBin).value
  val lineJars = (Compile / packageBin).all(lines).value
  val dir = (ThisBuild / baseDirectory).value / "python" / "spark_kinesis" / "jars"
  IO.delete(IO.listFiles(dir, "*.jar"))
  val copied = (bundle +: lineJars).map { j =>
    val out = dir / j.getName; IO.copyFile(j, out); out
  }
  sbt.io.Using.jarFile(verify = false)(bundle) { jar =>
    IO.transfer(jar.getInputStream(jar.getEntry("META-INF/NOTICE")), dir / "NOTICE")
    IO.transfer(jar.getInputStream(jar.getEntry("META-INF/spark-kinesis/BUNDLED.md")), dir / "BUNDLED.md")
  }
  sbt.io.Using.jarFile(verify = false)(lineJars.head) { jar =>
    val facts = "META-INF/spark-kinesis/spark-kinesis.json"
    IO.transfer(jar.getInputStream(jar.getEntry(facts)), dir / "spark-kinesis.json")
  }
  copied
}

// `make jar`: bundlePython, and publishM2 puts each artifact and its POM into the local Maven repository
// (spark-submit --packages reads it). One task, so the KPL bundle is assembled once (its notice merge is not cached
// between commands).
lazy val jars = taskKey[Unit]("bundlePython, and every artifact published to the local Maven repository")

// Whose unit tests `make test` runs: the KPL bundle's and the newest line's (Spark 4, Scala 2.13); `make test-extended`
// runs the Spark 3.5 line's on its first Scala (2.12): the other Spark, the other Scala folder. `make test`'s Spark 3.5
// leg runs that line's jar end to end. The third line, 3.5_2.13, compiles nothing those two do not (Spark 3.5's API, the
// Scala 2.13 folder); its jar is built and run end to end (tests marked `later_scala`). `make unit` tests every line.
lazy val unitTestProjects: Seq[ProjectReference] = Seq(kpl, spark4_213)
lazy val extendedTestProjects: Seq[ProjectReference] = Seq(spark35_212)
lazy val allProjects = inAggregates(LocalRootProject, includeRoot = false)
lazy val allLines = inProjects(lineProjects.map(p => p: ProjectReference): _*)
// `make test`'s Scala part: unitTestProjects' tests, and the benchmarks' compile (nothing runs them in `make test`, and
// code that nothing builds rots).
lazy val unitTests = taskKey[Unit]("The unit tests of unitTestProjects, and the benchmarks' compile")
lazy val extendedTests = taskKey[Unit]("The unit tests of extendedTestProjects (make test-extended)")

lazy val root = (project in file("."))
  .aggregate((kpl: ProjectReference) +: lineProjects.map(p => p: ProjectReference): _*)
  .settings(
    name := "spark-kinesis-root",
    publish / skip := true,
    bundlePython := bundleIntoPython(ScopeFilter(allLines)).value,
    jars := {
      bundlePython.value
      publishM2.all(ScopeFilter(allProjects)).value
    },
    unitTests := {
      (Test / test).all(ScopeFilter(inProjects(unitTestProjects: _*))).value
      (bench / Compile / compile).value
    },
    extendedTests := (Test / test).all(ScopeFilter(inProjects(extendedTestProjects: _*))).value
  )

// Benchmarks (not aggregated, never published): JMH on the writer's hot path, and BareKplLoop, the same records pushed
// straight into a KinesisProducer. `bench/writeClasspath` writes the runtime classpath to bench/jvm/target/classpath.txt
// so a harness can start BareKplLoop without sbt.
lazy val writeClasspath = taskKey[File]("Writes the runtime classpath to target/classpath.txt")

lazy val bench = (project in file("bench/jvm"))
  .dependsOn(spark4_213)
  .enablePlugins(JmhPlugin)
  .settings(
    name := "spark-kinesis-bench",
    publish / skip := true,
    scalaVersion := lines.last.scala,
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    libraryDependencies += "org.apache.spark" %% "spark-sql" % lines.last.spark,
    writeClasspath := {
      val out = target.value / "classpath.txt"
      IO.write(out, (Runtime / fullClasspath).value.files.map(_.getAbsolutePath).mkString(java.io.File.pathSeparator))
      out
    }
  )
