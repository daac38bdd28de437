package io.github.sparkkinesis

/** A platform the KPL ships a daemon for: its folder in the bundle (`<Platforms.ResourceRoot>/<folder>/<daemon>`), the
  * tags of the wheel that carries it (tools/release.py tags the wheel with all of them; pip installs it where one
  * fits), and its name for people.
  */
private[sparkkinesis] final case class Platform(folder: String, daemon: String, wheelTags: Seq[String], shown: String)

/** The one table of platforms: the JVM's daemon check reads it here, Python (`spark_kinesis._platforms`: the wheels,
  * `configure()`, the release check) from the facts resource the build writes from it.
  *
  * Each wheel tag is what the daemon itself needs (tools/release_check.py checks the binary against it): the Linux
  * x86_64 daemon links against glibc 2.12 at most, the aarch64 one against glibc 2.25 (and libuuid, which no tag can
  * say); the macOS daemon is an x86_64 Mach-O for macOS 10.15 or later, which Apple silicon runs through Rosetta 2
  * (macOS 11 and later): hence the arm64 tag, so that a native arm64 Python gets the wheel with the jars.
  */
private[sparkkinesis] object Platforms {

  /** Where the bundle keeps each platform's daemon (project/KplResources.scala renames the KPL's folder). */
  val ResourceRoot = "spark-kinesis-kpl-native-binaries"

  /** What works from Windows, where the KPL ships no daemon: said by the JVM's check ([[DaemonCheck]]) and by Python's
    * `configure()` (through the facts resource).
    */
  val WindowsAdvice: String =
    "Run Spark in WSL2 (its Linux x86_64 gets the jars: pip install spark-kinesis there), or use this machine as a " +
      "Spark Connect client (SparkSession.builder.remote(...)) of a Spark server on Linux or macOS that has the jars."

  val all: Seq[Platform] = Seq(
    Platform("linux-x86_64", "kinesis_producer", Seq("manylinux_2_12_x86_64"), "Linux x86_64 (glibc 2.12 or later)"),
    Platform(
      "linux-aarch64",
      "kinesis_producer",
      Seq("manylinux_2_25_aarch64"),
      "Linux aarch64 (glibc 2.25 or later, with libuuid)"
    ),
    Platform(
      "osx",
      "kinesis_producer",
      Seq("macosx_10_15_x86_64", "macosx_11_0_arm64"),
      "macOS 10.15 or later on x86_64, and on Apple silicon through Rosetta 2"
    )
  )

  /** The KPL's folder for a JVM's platform (its rule: `linux-<arch>` with amd64 as x86_64, `osx`, `windows`). */
  def folder(osName: String, osArch: String): String = {
    val os = osName.toLowerCase(java.util.Locale.ROOT)
    if (os.startsWith("windows")) "windows"
    else if (os.startsWith("linux")) s"linux-${if (osArch == "amd64") "x86_64" else osArch}"
    else if (os.startsWith("mac")) "osx"
    else s"$osName-$osArch"
  }

  /** Rosetta 2's runtime, as macOS installs it (`softwareupdate --install-rosetta`); Apple silicon runs x86_64 programs
    * only with it. The way macOS setup tools tell (the `oahd` service runs without it since macOS 11.5).
    */
  val RosettaRuntime = "/Library/Apple/usr/share/rosetta/rosetta"

  /** Whether `osName`/`osArch` is Apple silicon (a native arm64 JVM on macOS). */
  def appleSilicon(osName: String, osArch: String): Boolean =
    folder(osName, osArch) == "osx" && (osArch == "aarch64" || osArch == "arm64")
}
