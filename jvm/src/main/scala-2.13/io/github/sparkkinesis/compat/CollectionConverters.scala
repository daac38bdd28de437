package io.github.sparkkinesis.compat

/** `scala.jdk.CollectionConverters` (`asScala`, `asJava`); the 2.12 build has its own copy of this name. */
private[sparkkinesis] object CollectionConverters
    extends scala.collection.convert.AsJavaExtensions
    with scala.collection.convert.AsScalaExtensions
