package io.github.sparkkinesis

/** The writer's own threads: daemon threads (they never keep an executor JVM alive), named for thread dumps. */
private[sparkkinesis] object Threads {
  def daemon(name: String)(body: => Unit): Thread = {
    val t = new Thread(() => body, name)
    t.setDaemon(true)
    t
  }
}
