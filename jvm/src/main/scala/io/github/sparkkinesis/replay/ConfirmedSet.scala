package io.github.sparkkinesis.replay

/** The fingerprints of one batch that Kinesis confirmed in earlier attempts, as a multiset: sorted pairs `(h1, h2)`, a
  * fingerprint confirmed k times present k times. 16 bytes per confirmed record; read-only once built, so every task of
  * a JVM shares it (each task consumes it through its own [[Claims]]).
  */
private[sparkkinesis] final class ConfirmedSet private (pairs: Array[Long]) {
  def size: Int = pairs.length / 2

  private def h1(i: Int): Long = pairs(2 * i)
  private def h2(i: Int): Long = pairs(2 * i + 1)
  private[replay] def is(i: Int, a: Long, b: Long): Boolean = i < size && h1(i) == a && h2(i) == b

  /** The first index whose pair is not below `(a, b)`. */
  private[replay] def lowerBound(a: Long, b: Long): Int = {
    var lo = 0
    var hi = size
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (ConfirmedSet.less(h1(mid), h2(mid), a, b)) lo = mid + 1 else hi = mid
    }
    lo
  }

  /** A fresh consumer of this set, for one task attempt. */
  def claims(): Claims = new Claims(this)
}

private[sparkkinesis] object ConfirmedSet {
  val empty: ConfirmedSet = new ConfirmedSet(new Array[Long](0))

  /** The multiset of the pairs in `fingerprints` (h1, h2, h1, h2, …; taken over and sorted in place). */
  def of(fingerprints: Array[Long]): ConfirmedSet = {
    require(fingerprints.length % 2 == 0, "fingerprints come in pairs")
    PairSort.sort(fingerprints)
    new ConfirmedSet(fingerprints)
  }

  def less(a1: Long, a2: Long, b1: Long, b2: Long): Boolean = a1 < b1 || (a1 == b1 && a2 < b2)
}

/** One task attempt's use of a [[ConfirmedSet]]: each confirmation excuses one equal row, once. Two equal rows
  * confirmed once: the first is skipped, the second sent. Rows are only ever skipped against a confirmation this
  * attempt has not used, so what it skips is in Kinesis.
  */
private[sparkkinesis] final class Claims(set: ConfirmedSet) {
  private val used = new java.util.BitSet()

  /** True (and the confirmation used up) if an unused confirmation of `(h1, h2)` is left: the row may be skipped. */
  def take(h1: Long, h2: Long): Boolean = set.size > 0 && {
    val first = set.lowerBound(h1, h2)
    set.is(first, h1, h2) && {
      val i = used.nextClearBit(first)
      set.is(i, h1, h2) && { used.set(i); true }
    }
  }
}

/** In-place sort of the pairs of a `long` array (three-way quicksort: equal fingerprints, equal rows, are common). */
private[replay] object PairSort {
  def sort(a: Array[Long]): Unit = sort(a, 0, a.length / 2 - 1)

  private def sort(a: Array[Long], from: Int, to: Int): Unit = {
    var lo = from
    var hi = to
    while (lo < hi) {
      val m = lo + (hi - lo) / 2
      val p1 = a(2 * m)
      val p2 = a(2 * m + 1)
      var lt = lo
      var gt = hi
      var i = lo
      while (i <= gt) {
        val x1 = a(2 * i)
        val x2 = a(2 * i + 1)
        if (ConfirmedSet.less(x1, x2, p1, p2)) { swap(a, lt, i); lt += 1; i += 1 }
        else if (ConfirmedSet.less(p1, p2, x1, x2)) { swap(a, i, gt); gt -= 1 }
        else i += 1
      }
      // Recurse into the smaller side, loop on the larger: the stack stays O(log n).
      if (lt - lo < hi - gt) { sort(a, lo, lt - 1); lo = gt + 1 }
      else { sort(a, gt + 1, hi); hi = lt - 1 }
    }
  }

  private def swap(a: Array[Long], i: Int, j: Int): Unit = if (i != j) {
    val t1 = a(2 * i); val t2 = a(2 * i + 1)
    a(2 * i) = a(2 * j); a(2 * i + 1) = a(2 * j + 1)
    a(2 * j) = t1; a(2 * j + 1) = t2
  }
}
