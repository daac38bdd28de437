package io.github.sparkkinesis

import java.util.concurrent.ThreadFactory

/** The writer's own threads, the one place they are made: daemon threads (they never keep an executor JVM alive), named
  * for thread dumps.
  */
private[sparkkinesis] object Threads {
  def daemon(name: String)(body: => Unit): Thread = {
    val t = new Thread(() => body, name)
    t.setDaemon(true)
    t
  }

  /** For executors: every thread they make is `daemon(name)`. */
  def factory(name: String): ThreadFactory = (r: Runnable) => daemon(name)(r.run())
}
