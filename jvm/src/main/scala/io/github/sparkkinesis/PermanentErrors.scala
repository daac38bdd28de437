package io.github.sparkkinesis

/** Kinesis errors that no retry fixes: a stream that is not there, credentials Kinesis refuses, a permission the
  * credentials lack. Each has its fix; everything else (throttling, 500s, timeouts once the stream is known) is
  * transient and retried as before.
  *
  * What a write does when its daemon meets one ([[StreamRefusals]]): the records of that stream in flight fail at once
  * (the KPL would retry them until `RecordTtl`); a task that wrote to the stream with `fail_on_error=true` fails naming
  * it; with `fail_on_error=false` its records to that stream are counted and dropped for [[HoldMs]], then tried again
  * (a stream created meanwhile takes them). Other streams' records, and other queries' tasks, go on.
  */
private[sparkkinesis] object PermanentErrors {

  /** How long a lenient writer (`fail_on_error=false`) drops a refused stream's records before it tries again. */
  val HoldMs = 30000L

  /** Error code -> the fix, worded for `where` ("stream s in region r at endpoint e"). */
  private val fixes: Map[String, String => String] = Map(
    "ResourceNotFoundException" -> (w =>
      s"Kinesis has no $w. Check stream_name, region and endpoint (and the account the credentials belong to); " +
        "create the stream first if it is new"
    ),
    "AccessDeniedException" -> (w =>
      s"The credentials are not allowed an action the writer needs on $w. Grant kinesis:PutRecords, " +
        "kinesis:ListShards and kinesis:DescribeStreamSummary on the stream (docs/configuration.md, IAM)"
    ),
    "UnrecognizedClientException" -> (w =>
      s"Kinesis does not know the credentials' access key ($w): check the credentials options (or the default " +
        "chain), and that region and endpoint belong to the credentials' partition"
    ),
    "InvalidSignatureException" -> (w =>
      s"Kinesis refused the requests' signature ($w): check the secret key, and that region matches the endpoint"
    ),
    "IncompleteSignatureException" -> (w => s"Kinesis refused the requests' signature ($w): check the credentials"),
    "MissingAuthenticationTokenException" -> (w => s"Kinesis got requests without credentials ($w)"),
    "KMSAccessDeniedException" -> (w =>
      s"The credentials may not use the KMS key of $w: grant kms:GenerateDataKey on it"
    ),
    "KMSDisabledException" -> (w => s"The KMS key of $w is disabled: enable it, or change the stream's encryption"),
    "KMSNotFoundException" -> (w => s"The KMS key of $w does not exist: change the stream's encryption"),
    "KMSInvalidStateException" -> (w => s"The KMS key of $w is not usable (its state): check it in KMS")
  )

  def isPermanent(code: String): Boolean = fixes.contains(code)

  /** "ResourceNotFoundException: Kinesis has no stream s in region r at endpoint e. Check …". */
  def describe(code: String, where: String, detail: String = ""): String =
    s"$code${if (detail.nonEmpty) s" ($detail)" else ""}: ${fixes.get(code).fold(where)(_(where))}."

  /** "stream s in region r at endpoint e": what every message of these names. */
  def where(stream: String, config: ProducerConfig): String =
    s"stream $stream in region ${config.region.orElse(config.kpl.get("Region")).getOrElse("<default>")} at " +
      s"${config.endpoint.fold("the region's endpoint")(e => s"endpoint $e")}"
}

/** Kinesis refused writes to `stream` permanently: what a record of it in flight fails with, and what a task that wrote
  * to it rethrows. Not a sign of a broken daemon (its other streams' records go on).
  */
private[sparkkinesis] final class StreamRefused(val stream: String, message: String)
    extends RuntimeException(message, null, false, false)

/** The latest refusal of a stream a producer's daemon reported: `seenMs`, when the watch last saw it. */
private[sparkkinesis] final class Refusal(val error: StreamRefused, @volatile var seenMs: Long)

/** The streams Kinesis refused for good to one producer (`who`), and what each task does about them: the state of
  * [[PermanentErrors]]' rule, its trigger ([[refuse]], from the daemon's errors) and both decisions: a strict task
  * (`fail_on_error=true`) that wrote to a refused stream fails ([[failureFor]]); a lenient one drops the stream's
  * records while the refusal holds ([[dropping]]). `clockMs` gives milliseconds.
  */
private[sparkkinesis] final class StreamRefusals(who: String, config: ProducerConfig, clockMs: () => Long) {
  private val refusals = new java.util.concurrent.ConcurrentHashMap[String, Refusal]()

  /** The watch saw Kinesis refuse writes to `stream` with `code`: the first sighting (or the first after
    * [[PermanentErrors.HoldMs]] without one) logs it. Returns what the stream's records in flight fail with.
    */
  def refuse(stream: String, code: String): StreamRefused = {
    val now = clockMs()
    var r = refusals.get(stream)
    if (r == null || now - r.seenMs >= PermanentErrors.HoldMs) {
      val fresh = new Refusal(
        new StreamRefused(
          stream,
          s"Kinesis refused writes with ${PermanentErrors.describe(code, PermanentErrors.where(stream, config))} " +
            "The KPL retries such an error until kpl.RecordTtl; the writer fails the task at once instead (with " +
            s"fail_on_error=false it drops the stream's records, counted as failed, for ${PermanentErrors.HoldMs / 1000}" +
            " s, then tries again)."
        ),
        now
      )
      val won = if (r == null) refusals.putIfAbsent(stream, fresh) == null else refusals.replace(stream, r, fresh)
      if (won) StreamRefusals.log.warn(s"${fresh.error.getMessage} ($who)")
      r = refusals.get(stream)
    }
    r.seenMs = math.max(r.seenMs, now)
    r.error
  }

  /** A strict task's check: the refusal of a stream it wrote to (`firstWrites`: each stream and when the task first
    * wrote to it) that the watch saw since, else null.
    */
  def failureFor(firstWrites: java.util.Map[String, java.lang.Long]): StreamRefused =
    if (refusals.isEmpty) null
    else {
      val it = firstWrites.entrySet().iterator()
      var found: StreamRefused = null
      while (found == null && it.hasNext) {
        val w = it.next()
        val r = refusals.get(w.getKey)
        if (r != null && r.seenMs >= w.getValue) found = r.error
      }
      found
    }

  /** A lenient task's decision for a record of `stream`: its refusal while it holds ([[PermanentErrors.HoldMs]] since
    * the watch last saw it; the record is dropped), else null.
    */
  def dropping(stream: String): StreamRefused =
    if (refusals.isEmpty) null
    else {
      val r = refusals.get(stream)
      if (r != null && clockMs() - r.seenMs < PermanentErrors.HoldMs) r.error else null
    }
}

private[sparkkinesis] object StreamRefusals {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[StreamRefusals])
}
