package io.github.sparkkinesis.replay

import java.io.{DataInputStream, IOException}
import java.nio.ByteBuffer

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}
import org.slf4j.LoggerFactory

/** The fingerprints of confirmed records on a Hadoop FileSystem (`s3a://`, `hdfs://`, `file://`):
  * `<root>/<queryId>/<batchId>/<partition>-<plan>-<attempt>-<nonce>-<seq>` (`plan`: the driver's plan of the batch),
  * each file written once (create-only, never overwritten) by one task attempt: a version header, then 16 bytes per
  * confirmed record. Names are unique by the attempt's random nonce, so concurrent or retried attempts (also of another
  * run, whose attempt ids start again) never meet; create-only is the second guard.
  */
private[sparkkinesis] final class FingerprintStore(root: Path, conf: Configuration) {
  import FingerprintStore._

  private lazy val fs: FileSystem = root.getFileSystem(conf)

  def queryDir(queryId: String): Path = new Path(root, queryId)
  def batchDir(queryId: String, batchId: Long): Path = new Path(queryDir(queryId), batchId.toString)

  /** Writes `count` pairs of `fingerprints` as a new file `name` in `dir`; fails if it exists. */
  def write(dir: Path, name: String, fingerprints: Array[Long], count: Int): Unit = {
    // Encoded whole, then one write: the file system's stream pays per call (checksums, locks), not per byte.
    val bytes = ByteBuffer.allocate(HeaderBytes + 16 * count) // big-endian, as DataInputStream reads it
    bytes.putInt(Magic).putInt(Version)
    bytes.asLongBuffer().put(fingerprints, 0, 2 * count)
    val out = fs
      .createFile(new Path(dir, name))
      .overwrite(false)
      .recursive()
      .opt(ConditionalCreate, true) // S3A: If-None-Match on the PUT where the Hadoop has it (3.4.2+)
      .build()
    try out.write(bytes.array())
    finally out.close()
  }

  /** The fingerprints written for the batch so far in the files whose name `accept`s (h1, h2, …), or None if none. */
  def read(queryId: String, batchId: Long, accept: String => Boolean = _ => true): Option[Array[Long]] =
    readFiles(list(queryId, batchId).filter(f => accept(f.getPath.getName)))

  /** The batch's fingerprint files so far. */
  def list(queryId: String, batchId: Long): Seq[FileStatus] = list(batchDir(queryId, batchId)).filter(_.isFile)

  /** The fingerprints in `files` (of [[list]]), or None if there are none. */
  def readFiles(files: Seq[FileStatus]): Option[Array[Long]] =
    if (files.isEmpty) None
    else {
      val out = new LongArrayBuilder
      files.foreach(f => readFile(f, out))
      Some(out.result())
    }

  /** Whether the batch has fingerprints from an earlier attempt. */
  def exists(queryId: String, batchId: Long): Boolean = list(queryId, batchId).nonEmpty

  /** Deletes the fingerprints of the query's batches before `batchId` (committed: Spark plans a batch only once the one
    * before it is in the commit log). Returns how many batches went; a failure is logged, never thrown: leftovers only
    * cost storage. Several JVMs may delete at once (`foreach`'s tasks): what another removed first is no failure.
    */
  def deleteBefore(queryId: String, batchId: Long): Int =
    list(queryDir(queryId)).filter(s => s.isDirectory && batchNumber(s.getPath.getName).exists(_ < batchId)).count {
      s =>
        try fs.delete(s.getPath, true)
        catch {
          case _: java.io.FileNotFoundException => false // another JVM removed it first
          case NonFatal(e) =>
            log.warn(s"Could not delete the fingerprints of committed batch ${s.getPath}: $e (they only cost storage)")
            false
        }
    }

  private def list(dir: Path): Seq[FileStatus] =
    try fs.listStatus(dir).toSeq
    catch { case _: java.io.FileNotFoundException => Nil }

  /** Reads `f`'s whole pairs into `out`. An attempt killed while writing (an executor lost) can leave a file cut short,
    * even empty, or one its file system's checksum no longer matches: what it yields is used and the rest ignored, so a
    * replay skips less (duplicates), never a record that was not confirmed.
    */
  private def readFile(f: FileStatus, out: LongArrayBuilder): Unit =
    if (f.getLen < HeaderBytes) log.info(s"${f.getPath} holds no whole fingerprint (cut short by a lost attempt)")
    else
      try readWhole(f, out)
      catch {
        case e @ (_: java.io.EOFException | _: org.apache.hadoop.fs.ChecksumException) =>
          log.warn(s"${f.getPath} was cut short by a lost attempt; its whole fingerprints before that are used: $e")
      }

  private def readWhole(f: FileStatus, out: LongArrayBuilder): Unit = {
    val in = new DataInputStream(fs.open(f.getPath))
    try {
      val magic = in.readInt()
      val version = in.readInt()
      if (magic != Magic || version != Version)
        throw new IOException(
          s"${f.getPath} is not a fingerprint file of version $Version (magic $magic, version $version): " +
            "written by another spark-kinesis version, or not by spark-kinesis. Remove the batch's directory to " +
            "replay it without skipping."
        )
      // Whole pairs only: a file cut short by a crash still holds confirmed records.
      val pairs = (f.getLen - HeaderBytes) / 16
      var i = 0L
      while (i < pairs) { out.add(in.readLong(), in.readLong()); i += 1 }
    } finally in.close()
  }
}

private[sparkkinesis] object FingerprintStore {
  val Magic: Int = 0x534b4650 // "SKFP"
  val Version: Int = 1
  val HeaderBytes: Int = 8
  val ConditionalCreate = "fs.option.create.conditional.overwrite"
  private val log = LoggerFactory.getLogger(classOf[FingerprintStore])

  private def batchNumber(name: String): Option[Long] =
    if (name.nonEmpty && name.forall(_.isDigit)) scala.util.Try(name.toLong).toOption else None
}

/** A growing array of fingerprint pairs. */
private[replay] final class LongArrayBuilder(initialPairs: Int = 32) {
  private var a = new Array[Long](2 * math.max(32, initialPairs))
  private var n = 0
  def add(h1: Long, h2: Long): Unit = {
    if (n + 2 > a.length) a = java.util.Arrays.copyOf(a, a.length * 2)
    a(n) = h1
    a(n + 1) = h2
    n += 2
  }
  def pairs: Int = n / 2
  def addAll(o: LongArrayBuilder): Unit = { var i = 0; while (i < o.n) { add(o.a(i), o.a(i + 1)); i += 2 } }
  def result(): Array[Long] = java.util.Arrays.copyOf(a, n)

  /** The pairs so far in place (the first `2 * pairs` longs), for a writer that is done adding. */
  def array: Array[Long] = a
}
