package io.github.sparkkinesis

/** The little JSON `Facts` writes (build code: not in the jars). */
private[sparkkinesis] object Json {
  def str(s: String): String = "\"" + s.flatMap {
    case '"'          => "\\\""
    case '\\'         => "\\\\"
    case '\n'         => "\\n"
    case c if c < ' ' => "\\" + f"u${c.toInt}%04x"
    case c            => c.toString
  } + "\""
  def arr(items: Seq[String], sep: String = " "): String = items.mkString("[" + sep, "," + sep, sep + "]")
}
