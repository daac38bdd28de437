package io.github.sparkkinesis

import java.nio.file.{Files, Path}

/** Temporary directories of the unit tests, removed whole when a test or suite is done with them. */
object TestDirs {

  /** Deletes `root` and everything under it (deepest first). */
  def deleteTree(root: Path): Unit = if (Files.exists(root)) {
    val walk = Files.walk(root)
    try walk.sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.delete(p))
    finally walk.close()
  }
}
