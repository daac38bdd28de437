package io.github.sparkkinesis.bench

import java.util.concurrent.TimeUnit

import org.openjdk.jmh.annotations._

/** The settings of the benchmarks that time one operation in nanoseconds (JMH's annotations are inherited):
  * [[HotPathBench]], [[FingerprintBench]]. bench/run.py's command line sets iterations and forks again.
  */
@State(Scope.Thread)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 3, timeUnit = TimeUnit.SECONDS)
@Fork(1)
abstract class NanoBench
