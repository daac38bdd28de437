package io.github.sparkkinesis

import java.io.IOException
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}
import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

/** Why the KPL daemon cannot run here, in words that name the cause and the fix, within seconds instead of after the
  * KPL's connect timeout (its own log holds the cause; the task would only see the timeout):
  *   - before the KPL starts ([[environment]], also on the driver in local mode, where the daemon runs): a platform the
  *     bundle carries no daemon for; a temp directory that is missing, not writable, full, or on a `noexec` mount;
  *     `kpl.NativeExecutable` missing or without its run bit;
  *   - once the KPL has extracted its daemon ([[probe]]): the daemon itself run with no arguments, which prints its
  *     usage when it runs at all; the dynamic loader's own words when it cannot (a shared library missing, a glibc too
  *     old, no glibc at all).
  */
private[sparkkinesis] object DaemonCheck {
  private val log = LoggerFactory.getLogger(getClass)

  /** The platforms the bundle carries a daemon for, by the KPL's folder names, as the KPL's own class loader (where it
    * looks them up) sees them.
    */
  def carried: Seq[String] = Platforms.all.filter(p => daemon(p.folder, p.daemon) != null).map(_.folder)

  /** `folder`'s daemon in the bundle, found as the KPL finds it (its own class loader), or null. */
  private def daemon(folder: String, name: String): java.net.URL =
    classOf[io.github.sparkkinesis.shaded.kpl.KinesisProducer].getClassLoader
      .getResource(s"${Platforms.ResourceRoot}/$folder/$name")

  /** Why no carried daemon can run on a JVM of `osName`/`osArch`, or None. `carried`: the folders the bundle has (none
    * seen: a class loader that hides its resources from us, and the KPL's own start will tell); `rosetta`: whether
    * Rosetta 2 is installed (what an Apple silicon Mac needs for the macOS daemon).
    */
  private[sparkkinesis] def platformProblem(
      osName: String,
      osArch: String,
      carried: Seq[String],
      rosetta: Boolean
  ): Option[String] = {
    val here = Platforms.folder(osName, osArch)
    if (carried.isEmpty) None
    else if (here == "windows")
      Some(
        s"This JVM runs on $osName $osArch: the KPL ships no daemon for Windows, so the writer's tasks cannot run " +
          s"here. ${Platforms.WindowsAdvice.stripSuffix(".")}"
      )
    else if (!carried.contains(here))
      Some(
        s"This JVM runs on $osName $osArch ($here), for which spark-kinesis carries no KPL daemon (it carries " +
          s"${carried.mkString(", ")}). Run the executors on one of those, or build the KPL's daemon for this " +
          "platform and set kpl.NativeExecutable to it"
      )
    else if (Platforms.appleSilicon(osName, osArch) && !rosetta)
      Some(
        s"This Mac runs on Apple silicon ($osArch), and the KPL's macOS daemon is an x86_64 program, which macOS " +
          "runs only through Rosetta 2, not installed here. Install it: softwareupdate --install-rosetta " +
          "--agree-to-license"
      )
    else None
  }

  /** What can be checked before the KPL runs anything; throws a [[KinesisWriteException]] naming cause and fix. */
  def environment(config: ProducerConfig): Unit = {
    val kpc = config.kpc
    val native = kpc.getNativeExecutable.trim
    if (native.nonEmpty) executable(Paths.get(native))
    else {
      val (osName, osArch) = (System.getProperty("os.name"), System.getProperty("os.arch"))
      val here = Platforms.folder(osName, osArch)
      val rosetta = !Platforms.appleSilicon(osName, osArch) || Files.exists(Paths.get(Platforms.RosettaRuntime))
      platformProblem(osName, osArch, carried, rosetta).foreach(m => throw fail(m))
      val (dir, named) = tempDirectoryOf(config)
      tempDirectory(dir, named, daemonBytes(here))
    }
  }

  /** Where the KPL writes its daemon and the probe its output: `kpl.TempDirectory`, else `java.io.tmpdir`; and how a
    * message names it.
    */
  def tempDirectoryOf(config: ProducerConfig): (Path, String) = {
    val set = config.kpc.getTempDirectory.trim
    if (set.nonEmpty) (Paths.get(set), "kpl.TempDirectory")
    else (Paths.get(System.getProperty("java.io.tmpdir")), "java.io.tmpdir (kpl.TempDirectory unset)")
  }

  private def daemonBytes(platform: String): Long =
    try {
      val url = Platforms.all.find(_.folder == platform).map(p => daemon(p.folder, p.daemon)).orNull
      if (url == null) 0L else url.openConnection().getContentLengthLong.max(0L)
    } catch { case NonFatal(_) => 0L }

  private val TempFix =
    "Set kpl.TempDirectory to a writable directory on a file system that allows running programs, on every " +
      "executor (the KPL writes its daemon there and runs it)"

  private[sparkkinesis] def tempDirectory(dir: Path, named: String, needBytes: Long): Unit = {
    if (!Files.isDirectory(dir))
      throw fail(
        s"The KPL's temp directory $dir ($named) ${if (Files.exists(dir)) "is not a directory" else "does not exist"}. $TempFix"
      )
    if (!Files.isWritable(dir))
      throw fail(s"The KPL's temp directory $dir ($named) is not writable by this JVM's user. $TempFix")
    val free =
      try dir.toFile.getUsableSpace
      catch { case NonFatal(_) => Long.MaxValue }
    if (needBytes > 0 && free < needBytes + 16L * 1024 * 1024)
      throw fail(
        s"The KPL's temp directory $dir ($named) has ${free / (1024 * 1024)} MiB free; the KPL's daemon needs " +
          s"${needBytes / (1024 * 1024) + 16} MiB there. Free space there, or ${TempFix.head.toLower}${TempFix.tail}"
      )
    noexecMount(dir).foreach { mount =>
      throw fail(
        s"The KPL's temp directory $dir ($named) is on a file system mounted noexec ($mount): the KPL cannot run its " +
          s"daemon from there. $TempFix, or remount $mount without noexec"
      )
    }
  }

  private[sparkkinesis] def executable(file: Path): Unit = {
    val named = s"kpl.NativeExecutable $file"
    if (!Files.exists(file)) throw fail(s"$named does not exist on this host. Point it at the KPL daemon's executable")
    if (!Files.isRegularFile(file)) throw fail(s"$named is not a file. Point it at the KPL daemon's executable")
    noexecMount(file.getParent).foreach { mount =>
      throw fail(s"$named is on a file system mounted noexec ($mount): it cannot run from there. Move it elsewhere")
    }
    if (!Files.isExecutable(file))
      throw fail(s"$named is not executable (it has no run permission): chmod +x it")
  }

  /** The mount point holding `dir` if it is mounted noexec (Linux's /proc/self/mountinfo; None elsewhere). */
  private[sparkkinesis] def noexecMount(dir: Path): Option[String] =
    try {
      val mountinfo = Paths.get("/proc/self/mountinfo")
      if (dir == null || !Files.isReadable(mountinfo)) None
      else {
        val real = dir.toRealPath().toString
        val mounts =
          new String(Files.readAllBytes(mountinfo), StandardCharsets.UTF_8).split('\n').toSeq.flatMap { line =>
            val f = line.split(' ')
            // ID parent major:minor root mount-point options [optional…] - type source super-options
            if (f.length > 5) Some(f(4).replace("\\040", " ") -> f(5).split(',').toSet) else None
          }
        val holding = mounts.filter { case (point, _) =>
          real == point || real.startsWith(if (point.endsWith("/")) point else point + "/")
        }
        // The last mounted over the longest prefix is the one in effect.
        holding.zipWithIndex.sortBy { case ((point, _), i) => (point.length, i) }.lastOption.collect {
          case ((point, options), _) if options.contains("noexec") => point
        }
      }
    } catch { case NonFatal(_) => None }

  /** The path of the daemon `producer` runs (the KPL's own answer: where it extracted it, or NativeExecutable). */
  def executableOf(producer: AnyRef): Option[Path] =
    try {
      val f = producer.getClass.getDeclaredField("pathToExecutable")
      f.setAccessible(true)
      Option(f.get(producer)).map(p => Paths.get(p.toString))
    } catch {
      case NonFatal(e) =>
        log.debug(s"The KPL's daemon path is not readable here ($e): its start is not probed")
        None
    }

  /** Runs `exe` with no arguments: the daemon prints its usage and exits; anything else says why it cannot run. Its
    * output goes to a file in `tempDir` (the KPL's: `java.io.tmpdir` may be read-only where `kpl.TempDirectory` is
    * set).
    */
  def probe(exe: Path, tempDir: Path, timeoutMs: Long = 10000L): Unit = {
    val out = Files.createTempFile(tempDir, "spark-kinesis-daemon-probe", ".log")
    try {
      val process =
        try new ProcessBuilder(exe.toString).redirectErrorStream(true).redirectOutput(out.toFile).start()
        catch { case e: IOException => throw fail(cannotStart(exe, e)) }
      if (!process.waitFor(timeoutMs, TimeUnit.MILLISECONDS)) {
        process.destroyForcibly()
        return // it runs (it waits for something): the KPL's own start tells the rest
      }
      val text = new String(Files.readAllBytes(out), StandardCharsets.UTF_8).take(4000)
      explainExit(exe, process.exitValue(), text).foreach(m => throw fail(m))
    } finally Files.deleteIfExists(out)
  }

  private val MissingLibrary = """error while loading shared libraries: ([^:\s]+)""".r.unanchored
  private val OldGlibc = """version `(GLIBC_[0-9.]+)' not found""".r.unanchored

  /** None when the daemon ran (its usage shows); else the cause and fix. */
  private[sparkkinesis] def explainExit(exe: Path, code: Int, output: String): Option[String] = output match {
    case _ if output.contains("Usage:") => None
    case MissingLibrary(lib) =>
      val pkg = if (lib.startsWith("libuuid")) " (Debian/Ubuntu: libuuid1; RHEL/Amazon Linux: libuuid)" else ""
      Some(
        s"The KPL daemon $exe cannot start: it needs the shared library $lib, which this host does not have. " +
          s"Install it on every executor$pkg"
      )
    case OldGlibc(version) =>
      Some(
        s"The KPL daemon $exe cannot start: it needs $version or newer, which this host's C library does not " +
          "provide. Run the executors on a newer Linux (glibc), or build the daemon there and set kpl.NativeExecutable"
      )
    case _ =>
      Some(
        s"The KPL daemon $exe exited with code $code as it started" +
          s"${if (output.trim.nonEmpty) s" (${output.trim.linesIterator.take(3).mkString(" / ").take(500)})" else ""}" +
          ". Check that it is the KPL's daemon for this platform (kpl.NativeExecutable)"
      )
  }

  private def cannotStart(exe: Path, e: IOException): String = {
    val msg = String.valueOf(e.getMessage)
    if (msg.contains("error=13")) {
      noexecMount(exe.getParent) match {
        case Some(mount) =>
          s"The KPL cannot run its daemon $exe: it is on a file system mounted noexec ($mount). $TempFix, or remount " +
            s"$mount without noexec"
        case None if !Files.isExecutable(exe) => s"The KPL daemon $exe has no run permission: chmod +x it"
        case None                             => s"The KPL cannot run its daemon $exe: permission denied ($msg)"
      }
    } else if (msg.contains("error=2") && Files.exists(exe))
      s"The KPL daemon $exe cannot start: its program loader is missing. The daemon is built for Linux with glibc; " +
        "this host's C library is another (musl, as on Alpine): run the executors on a glibc image, or install " +
        "glibc's compatibility layer"
    else if (msg.contains("error=8"))
      s"The KPL daemon $exe is not a program for this platform (${System.getProperty("os.name")} " +
        s"${System.getProperty("os.arch")}): $msg"
    else s"The KPL cannot start its daemon $exe: $msg"
  }

  private def fail(message: String) = new KinesisWriteException(s"$message.", null)
}
