import java.io.{ByteArrayInputStream, File}

import org.apache.commons.compress.archivers.zip.{ZipArchiveEntry, ZipArchiveOutputStream, ZipFile}

import org.objectweb.asm.{ClassReader, ClassWriter}
import org.objectweb.asm.commons.{ClassRemapper, Remapper}
import sbtassembly.Assembly.JarEntry
import sbtassembly.{CustomMergeStrategy, MergeStrategy}

/** The KPL's daemons and CA certificates at resource paths of our own.
  *
  * The KPL finds them by fixed paths (`amazon-kinesis-producer-native-binaries/<platform>/kinesis_producer`,
  * `cacerts/<hash>.0`), the same in every KPL jar, and extracts the daemon into `<tmp>/<that first path segment>`. With
  * another KPL on the class path (EMR ships one inside the awslabs Kinesis connector) each would find and start
  * whichever daemon comes first. Relocating the KPL's classes does not move these paths (they are not package names),
  * so the bundle moves the resources and rewrites the two string constants in the KPL's classes that name them: our KPL
  * then loads, extracts and starts only our daemon, and another KPL never finds ours.
  *
  * The daemons (~210 of the bundle's ~264 MB) do not go through sbt-assembly: its shader reads every entry of every jar
  * into memory a byte at a time before any merge strategy sees it (about half of the assembly every line's compile
  * waits for), and no rule renames a daemon. The assembly takes the KPL's jar without them (`withoutDaemons`), and
  * `withDaemons` adds them to what it built, at our path, copied as the KPL's jar stores them (neither step inflates an
  * entry).
  */
object KplResources {
  val ShadedPrefix = "io.github.sparkkinesis.shaded"
  val ShadedKplPath: String = ShadedPrefix.replace('.', '/') + "/kpl/"

  /** The KPL's resource roots (as its classes spell them) and ours; a root is also the extraction directory's name. */
  val Moves: Seq[(String, String)] = Seq(
    "amazon-kinesis-producer-native-binaries" -> "spark-kinesis-kpl-native-binaries",
    "cacerts/" -> "spark-kinesis-kpl-cacerts/"
  )

  /** The KPL jar's daemons, one per platform: every entry under the first root. */
  def isDaemon(path: String): Boolean = path.startsWith(Moves.head._1 + "/")

  /** `kplJar` without its daemons, as `out`. */
  def withoutDaemons(kplJar: File, out: File): File =
    copyRaw(out, Seq(kplJar -> (e => if (isDaemon(e.getName)) None else Some(e))))

  /** `bundle` and then the daemons of `kplJar` at our path (and the bundle's entries' time), as `out`. */
  def withDaemons(bundle: File, kplJar: File, out: File): File = {
    val time = using(ZipFile.builder().setFile(bundle).get())(_.getEntries.nextElement().getTime)
    def moved(e: ZipArchiveEntry): Option[ZipArchiveEntry] =
      if (!isDaemon(e.getName)) None
      else {
        val m = new ZipArchiveEntry(movedResource(e.getName).get)
        m.setMethod(e.getMethod); m.setCrc(e.getCrc); m.setSize(e.getSize); m.setCompressedSize(e.getCompressedSize)
        m.setTime(time)
        Some(m)
      }
    copyRaw(out, Seq(bundle -> (e => Some(e)), kplJar -> moved))
  }

  /** The entries each jar's function keeps (or renames), in the jars' order and each one's, copied compressed. */
  private def copyRaw(out: File, from: Seq[(File, ZipArchiveEntry => Option[ZipArchiveEntry])]): File = {
    val tmp = new File(out.getPath + ".tmp")
    tmp.getParentFile.mkdirs()
    using(new ZipArchiveOutputStream(tmp)) { zip =>
      for ((jar, keep) <- from) using(ZipFile.builder().setFile(jar).get()) { in =>
        val entries = in.getEntriesInPhysicalOrder
        while (entries.hasMoreElements) {
          val e = entries.nextElement()
          keep(e).foreach(k => using(in.getRawInputStream(e))(raw => zip.addRawArchiveEntry(k, raw)))
        }
      }
    }
    java.nio.file.Files.move(tmp.toPath, out.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
    out
  }

  private def using[A <: AutoCloseable, B](a: A)(f: A => B): B = try f(a)
  finally a.close()

  /** Where a resource of the KPL's jar goes in the bundle, if it is one of the moved ones. */
  def movedResource(path: String): Option[String] = Moves.collectFirst {
    case (from, to) if path.startsWith(from.stripSuffix("/") + "/") =>
      to.stripSuffix("/") + "/" + path.substring(from.stripSuffix("/").length + 1)
  }

  val moveResource: MergeStrategy = CustomMergeStrategy("kpl-resource-move") { deps =>
    Right(Vector(JarEntry(movedResource(deps.head.target).get, deps.head.stream)))
  }

  /** How many constants each class must have had rewritten: a KPL whose lookup changed fails the build here. */
  val ExpectedRewrites: Map[String, Int] = Map(
    ShadedKplPath + "KinesisProducer.class" -> 1,
    ShadedKplPath + "CertificateExtractor.class" -> 1
  )

  val rewriteClass: MergeStrategy = CustomMergeStrategy("kpl-resource-constants") { deps =>
    val d = deps.head
    val bytes = sbt.io.Using.bufferedInputStream(d.stream())(sbt.IO.readBytes(_))
    var rewrites = 0
    val remapper = new Remapper {
      override def mapValue(value: Object): Object = value match {
        case s: String =>
          Moves.collectFirst { case (from, to) if s == from => to } match {
            case Some(to) => rewrites += 1; to
            case None     => s
          }
        case other => super.mapValue(other)
      }
    }
    val writer = new ClassWriter(0)
    new ClassReader(bytes).accept(new ClassRemapper(writer, remapper), 0)
    val expected = ExpectedRewrites.getOrElse(d.target, 0)
    if (rewrites != expected)
      Left(s"${d.target}: $rewrites of the KPL's resource paths rewritten, expected $expected (did the KPL change?)")
    else
      Right(
        Vector(JarEntry(d.target, () => new ByteArrayInputStream(if (rewrites == 0) bytes else writer.toByteArray)))
      )
  }
}
