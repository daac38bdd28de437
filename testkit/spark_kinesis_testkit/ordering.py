"""Per-key order as a reader sees it: records read back in shard order, each carrying its key's sequence number."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

R = TypeVar("R")


@dataclass
class Order:
    """What a reader met, walking each shard in order: ``inversions`` counts records that arrived, for the first time,
    after a later record of their key (a re-send of a record already read is a duplicate, not an inversion);
    ``examples`` the first few as (key, seq, the later seq seen before it)."""

    records: int = 0
    duplicates: int = 0
    inversions: int = 0
    examples: list[tuple[str, int, int]] = field(default_factory=list)


def order_of(records: Iterable[R], key_and_seq: Callable[[R], tuple[str, int]]) -> Order:
    """``records`` in the order a reader met them (shard after shard, each in sequence-number order: a key lives in
    one shard while the stream is not resharded)."""
    out = Order()
    latest: dict[str, int] = {}
    seen: set[tuple[str, int]] = set()
    for r in records:
        key, seq = key_and_seq(r)
        out.records += 1
        if (key, seq) in seen:
            out.duplicates += 1
            continue
        seen.add((key, seq))
        last = latest.get(key)
        if last is not None and seq < last:
            out.inversions += 1
            if len(out.examples) < 5:
                out.examples.append((key, seq, last))
        else:
            latest[key] = seq
    return out
