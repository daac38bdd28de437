package io.github.sparkkinesis.compat

/** Scala 2.13's `scala.jdk.CollectionConverters` (`asScala`, `asJava`) for the 2.12 build: sources import this. */
private[sparkkinesis] object CollectionConverters
    extends scala.collection.convert.DecorateAsJava
    with scala.collection.convert.DecorateAsScala
