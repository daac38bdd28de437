package io.github.sparkkinesis

/** Strict value parsing shared by writer and KPL options: errors name the option and the fix. */
private[sparkkinesis] object Parse {
  def long(option: String, v: String): Long =
    longOption(v).getOrElse(throw bad(option, v, "a whole number"))

  def int(option: String, v: String): Int =
    longOption(v)
      .filter(n => n.isValidInt)
      .map(_.toInt)
      .getOrElse(throw bad(option, v, "a whole number within 32-bit range"))

  /** `v.trim.toLongOption` (Scala 2.13 only). */
  def longOption(v: String): Option[Long] =
    try Some(java.lang.Long.parseLong(v.trim))
    catch { case _: NumberFormatException => None }

  def bool(option: String, v: String): Boolean = v.trim.toLowerCase(java.util.Locale.ROOT) match {
    case "true"  => true
    case "false" => false
    case _       => throw bad(option, v, "true or false")
  }

  /** One of `allowed.words`, in any case, worded as every option's mistake is ([[Allowed.OneOf]]). */
  def oneOf(option: String, v: String, allowed: Allowed.OneOf): String =
    allowed.words.find(_.equalsIgnoreCase(v.trim)).getOrElse(throw bad(option, v, allowed.expected))

  def bad(option: String, v: String, expected: String): IllegalArgumentException =
    new IllegalArgumentException(s"Option $option='$v' is invalid: expected $expected.")
}

private[sparkkinesis] object Suggest {
  def closest(word: String, candidates: Iterable[String]): Option[String] = {
    val w = word.toLowerCase(java.util.Locale.ROOT)
    val scored = candidates.map(c => c -> distance(w, c.toLowerCase(java.util.Locale.ROOT)))
    scored.filter(_._2 <= math.max(2, w.length / 4)).toSeq.sortBy(_._2).headOption.map(_._1)
  }

  private def distance(a: String, b: String): Int = {
    val d = Array.tabulate(a.length + 1, b.length + 1)((i, j) => if (i == 0) j else if (j == 0) i else 0)
    for (i <- 1 to a.length; j <- 1 to b.length) {
      val cost = if (a(i - 1) == b(j - 1)) 0 else 1
      d(i)(j) = math.min(math.min(d(i - 1)(j) + 1, d(i)(j - 1) + 1), d(i - 1)(j - 1) + cost)
    }
    d(a.length)(b.length)
  }
}
