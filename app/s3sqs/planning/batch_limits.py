"""How big the next batch is (`batch_limit`, `batch_end`, `batch_full`), and which files go first with
latestFirst (`fresh_first`). Pure: the controller plans with them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

@dataclass(frozen=True)
class Limit:
    max_files: int | None
    max_bytes: int | None


def batch_limit(opt_files: int | None, opt_bytes: int | None, engine: str | None = None,
                value: int | None = None) -> Limit:
    """The limit of the next batch. Spark 4.2+ passes its own (`engine` "files", "bytes" or "all", from
    the default this source declares, or ReadAllAvailable); on Spark 4.0 (`engine` None) the options are
    the limit."""
    if engine is None:
        return Limit(opt_files, opt_bytes)
    if engine == "files":
        return Limit(value, opt_bytes)
    if engine == "bytes":
        return Limit(None, value)
    if engine == "all":
        return Limit(None, None)
    raise ValueError(f"unknown read limit {engine!r}")


def batch_end(start: int, last_seq: int, limit: Limit, sizes: Iterable[int] = ()) -> int:
    """The end offset of the next batch: all pending files up to the limits, at least one file.
    `sizes` are the sizes of the files after `start`, in order (only read with a byte limit)."""
    end = last_seq if limit.max_files is None else min(last_seq, start + limit.max_files)
    if limit.max_bytes is None or end <= start:
        return max(start, end)
    total, n = 0, 0
    for size in sizes:
        if n >= end - start:
            break
        if n > 0 and total + size > limit.max_bytes:
            break
        total += size
        n += 1
    return start + max(n, 1)


def backlog_share(max_files: int) -> int:
    """With latestFirst, the places of a batch kept for the backlog while fresh files wait: a quarter, so
    history drains even when fresh files alone would fill every batch."""
    return max(1, max_files // 4)


def fresh_first(base: int, last: int, fresh: Sequence[int], max_files: int) -> list[tuple[int, int]]:
    """latestFirst: the moves (from seq, to seq) that put the next batch's files at (base, base + max_files].

    Pending files are (base, last]; `fresh` are the seqs of files announced since the previous plan, oldest
    first by event time (a listing's or an inventory's files never are: they are history). The batch takes
    the newest fresh files first, up to all but `backlog_share` of its places, and fills the rest with the
    oldest of the others.
    The batch's files outside that range trade places with the range's files outside the batch, which wait
    further back: a file may wait, but none is skipped. Empty when every pending file fits in the batch,
    or nothing is fresh."""
    fresh = [s for s in fresh if base < s <= last]
    pending = last - base
    if pending <= max_files or not fresh:
        return []
    take = min(len(fresh), max_files - min(pending - len(fresh), backlog_share(max_files)))
    batch = set(fresh[len(fresh) - take:])
    seq = base
    while len(batch) < max_files:  # the oldest of the rest
        seq += 1
        batch.add(seq)
    places = range(base + 1, base + max_files + 1)
    coming, going = sorted(batch.difference(places)), [n for n in places if n not in batch]
    return list(zip(coming, going)) + list(zip(going, coming))


def batch_full(pending: int, max_files: int | None) -> bool:
    """Whether the files recorded and not planned yet make a whole batch."""
    return max_files is not None and pending >= max_files


def plan_start(start: int | None, acknowledged: int, read_end: int, restart_floor: int) -> tuple[int, int]:
    """(what Spark has committed, where the next batch starts) for latestOffset.

    Committed: Spark's `start` (4.1 and later pass it), else the end of the last batch Spark read in this
    process (4.0 asks for the next offset only once the batch before is committed), at least what the source
    `acknowledged`. Spark 4.0 passes no start: the next batch starts no earlier than `restart_floor`, the end
    of the last plan made durable before this process, which Spark has run, will replay first, or never
    logged (its next batch then starts lower and reads those files too). From the last acknowledged commit, a
    run that ended between Spark's commit and its next plan would answer an offset Spark has committed, which
    it takes for no new data, at every trigger. Nothing is acknowledged on that floor, only on what Spark says."""
    if start is not None:
        return start, start
    committed = max(acknowledged, read_end)
    return committed, max(committed, restart_floor)
