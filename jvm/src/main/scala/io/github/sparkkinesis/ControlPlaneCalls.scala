package io.github.sparkkinesis

import com.codahale.metrics.Counter
import io.github.sparkkinesis.shaded.awssdk.core.interceptor.{Context, ExecutionAttributes, ExecutionInterceptor}

/** The control-plane calls a producer's writer makes (`DescribeStreamSummary`, `ListShards`), every attempt as the
  * account's limits count it, and those Kinesis throttled (`LimitExceededException`). The account shares 20
  * `DescribeStreamSummary` a second among all its applications, so this is what one JVM spends of it (the producer's
  * metrics `controlPlaneCalls` and `controlPlaneThrottles`). Attempts are counted by the SDK client's interceptor, the
  * SDK's own retries included; a throttle by [[SdkStreamMetadata]]: the SDK does not retry `LimitExceededException`
  * (not one of its throttling codes), so each is one failed call, and the reader backs off
  * ([[aggregation.StreamLayouts]]).
  */
private[sparkkinesis] final class ControlPlaneCalls(val calls: Counter, val throttles: Counter) {
  val interceptor: ExecutionInterceptor = new ExecutionInterceptor {
    override def beforeTransmission(context: Context.BeforeTransmission, attributes: ExecutionAttributes): Unit =
      calls.inc()
  }
}

private[sparkkinesis] object ControlPlaneCalls {

  /** Counted nowhere: the driver's check (one call per query start). */
  def uncounted: ControlPlaneCalls = new ControlPlaneCalls(new Counter, new Counter)

  /** The error code of a control-plane call over the account's or the stream's rate. */
  val ThrottleCode = "LimitExceededException"
}
