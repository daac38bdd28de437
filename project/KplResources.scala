import java.io.ByteArrayInputStream

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
  */
object KplResources {
  val ShadedPrefix = "io.github.sparkkinesis.shaded"
  val ShadedKplPath: String = ShadedPrefix.replace('.', '/') + "/kpl/"

  /** The KPL's resource roots (as its classes spell them) and ours; a root is also the extraction directory's name. */
  val Moves: Seq[(String, String)] = Seq(
    "amazon-kinesis-producer-native-binaries" -> "spark-kinesis-kpl-native-binaries",
    "cacerts/" -> "spark-kinesis-kpl-cacerts/"
  )

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
