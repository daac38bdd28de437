package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

class WriterCountSuite extends AnyFunSuite {
  test("executors write a query's partitions: at most one producer each, at least one") {
    assert(WriterCount.count(partitions = 16, executors = 4) == 4)
    assert(WriterCount.count(partitions = 2, executors = 4) == 2, "two tasks reach two executors at most")
    assert(WriterCount.count(partitions = 0, executors = 4) == 1, "an empty write still counts its one writer")
    assert(WriterCount.count(partitions = Int.MaxValue, executors = 40) == 40, "foreach: every executor")
  }

  test("no Spark session on the driver: no count, and the share finds its start alone") {
    assert(WriterCount.executors() == 0)
    assert(WriterCount.of(8) == 0 && WriterCount.count(8, 0) == 0)
  }
}
