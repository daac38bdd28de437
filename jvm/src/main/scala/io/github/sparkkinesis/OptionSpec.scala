package io.github.sparkkinesis

/** What a writer option allows beyond its type, and the one wording of a mistake: the JVM's parse and Python's keyword
  * check (through the build's facts resource, `Facts`, build code in jvm/src/facts) both say "expected <expected>".
  */
private[sparkkinesis] sealed abstract class Allowed(val expected: String)
private[sparkkinesis] object Allowed {

  /** A whole number of at least `min`; `expected` says what it counts. */
  final case class AtLeast(min: Long, what: String) extends Allowed(what)

  /** One of these words, in any case. */
  final case class OneOf(words: Seq[String])
      extends Allowed(words.init.map(w => s"'$w'").mkString(", ") + s" or '${words.last}'")

  /** Something other than blanks: set to a blank value, the option is a mistake rather than unset. */
  case object NonBlank extends Allowed("a non-empty string")
}

/** One writer option: its key, its type (`string`, `int`, `long`, `boolean`), what it is for (Python's docstring), its
  * default value (None: no default value), what it allows, and whether it is a secret.
  */
private[sparkkinesis] final case class OptionSpec(
    name: String,
    kind: String,
    doc: String,
    default: Option[String],
    allowed: Option[Allowed],
    secret: Boolean
) {

  /** Prints as its key, so messages name the option by interpolating it. */
  override def toString: String = name
}
