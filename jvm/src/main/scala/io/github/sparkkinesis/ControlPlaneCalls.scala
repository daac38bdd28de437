package io.github.sparkkinesis

import java.util.concurrent.atomic.AtomicLong

import com.codahale.metrics.Counter
import io.github.sparkkinesis.shaded.awssdk.core.interceptor.{Context, ExecutionAttributes, ExecutionInterceptor}

/** The control-plane calls one client makes (`DescribeStreamSummary`, `ListShards`), every attempt as the account's
  * limits count it, and those Kinesis throttled (`LimitExceededException`). The account shares 20
  * `DescribeStreamSummary` a second among all its applications, so this is what one JVM spends of it (an executor's
  * producer metrics `controlPlaneCalls` and `controlPlaneThrottles`; the driver's per query). Attempts are counted by
  * the SDK client's interceptor, the SDK's own retries included; a throttle by [[SdkStreamMetadata]]: the SDK does not
  * retry `LimitExceededException` (not one of its throttling codes), so each is one failed call, and the reader backs
  * off ([[aggregation.StreamLayouts]]).
  *
  * Each call is also held until a task claims it ([[claim]]): the task totals report every call once, by the next task
  * of the producer to report (the calls are the JVM's, shared by its tasks, and some are made by a background thread).
  */
private[sparkkinesis] final class ControlPlaneCalls(val calls: Counter, val throttles: Counter) {
  private val unclaimedCalls = new AtomicLong()
  private val unclaimedThrottles = new AtomicLong()

  val interceptor: ExecutionInterceptor = new ExecutionInterceptor {
    override def beforeTransmission(context: Context.BeforeTransmission, attributes: ExecutionAttributes): Unit = {
      calls.inc()
      unclaimedCalls.incrementAndGet()
    }
  }

  def throttled(): Unit = {
    throttles.inc()
    unclaimedThrottles.incrementAndGet()
  }

  /** The calls and throttles no one claimed yet, now claimed. */
  def claim(): ControlPlaneCount = ControlPlaneCount(unclaimedCalls.getAndSet(0L), unclaimedThrottles.getAndSet(0L))
}

/** Control-plane calls and, of them, throttled ones. */
private[sparkkinesis] final case class ControlPlaneCount(calls: Long, throttles: Long) {
  def +(o: ControlPlaneCount): ControlPlaneCount = ControlPlaneCount(calls + o.calls, throttles + o.throttles)
}

private[sparkkinesis] object ControlPlaneCount {
  val zero: ControlPlaneCount = ControlPlaneCount(0L, 0L)
}

private[sparkkinesis] object ControlPlaneCalls {

  /** Counters of their own (the driver's calls for a query; calls no metric shows). */
  def apply(): ControlPlaneCalls = new ControlPlaneCalls(new Counter, new Counter)

  /** The error code of a control-plane call over the account's or the stream's rate. */
  val ThrottleCode = "LimitExceededException"
}
