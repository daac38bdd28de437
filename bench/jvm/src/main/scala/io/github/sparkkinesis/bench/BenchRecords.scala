package io.github.sparkkinesis.bench

import java.nio.charset.StandardCharsets

/** The benchmark records, byte for byte what the Spark side generates with `concat(lpad(cast(value as string), 20,
  * '0'), repeat('x', B - 20))`, keyed by `value` as a string.
  */
object BenchRecords {
  val IdDigits = 20

  def partitionKey(id: Long): String = java.lang.Long.toString(id)

  /** `id` zero-padded to 20 ASCII digits, then `'x' * (payloadBytes - 20)`; `id` must be non-negative. */
  def data(id: Long, payloadBytes: Int): Array[Byte] = {
    require(payloadBytes >= IdDigits, s"payload bytes must be at least $IdDigits, got $payloadBytes")
    require(id >= 0, s"ids must be non-negative, got $id")
    val out = new Array[Byte](payloadBytes)
    java.util.Arrays.fill(out, IdDigits, payloadBytes, 'x'.toByte)
    val digits = java.lang.Long.toString(id).getBytes(StandardCharsets.US_ASCII)
    require(digits.length <= IdDigits, s"id $id has more than $IdDigits digits")
    java.util.Arrays.fill(out, 0, IdDigits - digits.length, '0'.toByte)
    System.arraycopy(digits, 0, out, IdDigits - digits.length, digits.length)
    out
  }
}
