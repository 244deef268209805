"""Pure decisions of the source, each with one owner here:

- what becomes of each received message and of each file it announces (`plan_round`, `decide`);
- how big a batch is (`batch_limit`, `batch_end`, `batch_full`), which files go first with latestFirst
  (`fresh_first`), and how far the intake may receive ahead (`intake_room`, `next_polls`, `poll_wait`,
  `polls_for`);
- when a listing is due (`backfill_due`) and when old state is forgotten (`trim_due`, `trim_cutoff_ms`);
- how a batch's big files are split by byte range (`split_files`) and its files and pieces packed into
  Spark partitions (`pack`).

No I/O: the driver feeds these with what it received and read, and acts on what they return.
"""
from __future__ import annotations

import fnmatch
import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterable, NamedTuple, Sequence

from ..core import counters
from ..core.files import Piece, S3File, dedup_key
from ..core.vocabulary import FileOutcome, MessageFate
from ..reading.blocks import split_ranges
from .events import ParsedBody

NEW, DUPLICATE, TOO_OLD, GLOB_MISMATCH = FileOutcome  # what becomes of an announced file

SQS_BATCH = 10                 # messages per ReceiveMessage / DeleteMessageBatch: SQS's own limit
TRIM_INTERVAL_SECONDS = 300    # how often committed files older than maxFileAge are forgotten
MAX_PENDING_FILES = 10_000     # files the intake may record ahead of planning, at most
AHEAD_BATCHES = 2              # ... and no more than this many batches' worth
ROUND_WAVES = 4                # a round of receives is at most this many waves of sqs.maxConcurrency each
# What opening one more file in a task is worth, in bytes, when packing. Spark counts 4 MB for a task that
# opens its files one by one; a task here opens several at once (reader.READ_THREADS).
OPEN_COST_BYTES = 128 << 10
SPLIT_OPEN_COST = 4 << 20  # Spark's openCostInBytes: the smallest piece a split file is cut into (split_bytes)


class Decision(NamedTuple):  # a tuple: one is made per announced file, and a frozen dataclass costs more to make
    file: S3File
    dedup_key: str
    outcome: FileOutcome
    seen_seq: int | None = None  # for duplicates of indexed files: the seq the file already has


def glob_matches(pattern: str | None, key: str) -> bool:
    """Like Spark's pathGlobFilter the pattern matches the file name; with a '/' in it, the whole key."""
    if not pattern:
        return True
    target = key if "/" in pattern else key.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(target, pattern)


def decide(files: Iterable[S3File], seen: Callable[[str], int | None], now: datetime,
           max_age_seconds: float, glob: str | None, allow_overwrites: bool) -> list[Decision]:
    """Classify each announced file. Duplicates inside `files` themselves count as duplicates too."""
    out: list[Decision] = []
    this_round: set[str] = set()
    now_ms = now.timestamp() * 1000
    for f in files:
        k = dedup_key(f, allow_overwrites)
        if not glob_matches(glob, f.key):
            out.append(Decision(f, k, GLOB_MISMATCH))
        elif f.event_ms is not None and now_ms - f.event_ms > max_age_seconds * 1000:
            out.append(Decision(f, k, TOO_OLD))
        elif k in this_round:
            out.append(Decision(f, k, DUPLICATE))
        else:
            s = seen(k)
            if s is not None:
                out.append(Decision(f, k, DUPLICATE, s))
            else:
                this_round.add(k)
                out.append(Decision(f, k, NEW))
    return out


@dataclass
class Round:
    """The decisions on one round of received messages."""
    new_files: list[tuple[str, S3File]] = field(default_factory=list)   # (dedup key, file), to record
    fates: list[MessageFate] = field(default_factory=list)              # per message, in order
    keep: list[bool] = field(default_factory=list)                      # per message: leave it for the DLQ
    skipped: list[Decision] = field(default_factory=list)               # files filtered out, to log
    counts: Counter = field(default_factory=Counter)                    # files and messages by outcome (counters)


def plan_round(bodies: Sequence[ParsedBody | None], seen: Callable[[str], int | None], now: datetime,
               max_age_seconds: float, glob: str | None, allow_overwrites: bool,
               keep_for_consumer_error: bool) -> Round:
    """Decide every file and every message of a round. A body is None when it could not be parsed.

    Every message is deleted once its new files are durable in the index, except, when
    `keep_for_consumer_error` is set, those that cannot be parsed or whose files were all filtered out:
    they stay in the queue to reach the dead-letter queue.
    """
    r = Round()
    files = [f for b in bodies if b is not None for f in b.files]
    decisions = iter(decide(files, seen, now, max_age_seconds, glob, allow_overwrites))
    by_outcome: Counter = Counter()  # counted by enum, named once at the end: this runs once per file
    for body in bodies:
        if body is None:
            fate = MessageFate.UNPARSEABLE
        elif not body.files:
            fate = body.kind
        else:
            outcomes = set()
            for _ in body.files:
                d = next(decisions)
                outcomes.add(d.outcome)
                by_outcome[d.outcome] += 1
                if d.outcome is NEW:
                    r.new_files.append((d.dedup_key, d.file))
                elif d.outcome is not DUPLICATE:
                    r.skipped.append(d)
            fate = MessageFate.NEW if NEW in outcomes else MessageFate.DUPLICATE if DUPLICATE in outcomes \
                else MessageFate.FILTERED
        r.fates.append(fate)
    for fate in r.fates:
        r.keep.append(keep_for_consumer_error and fate in (MessageFate.UNPARSEABLE, MessageFate.FILTERED))
    r.counts.update({counters.files(o): n for o, n in by_outcome.items()})
    r.counts.update({counters.messages(f): n for f, n in Counter(r.fates).items()})
    return r


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


def intake_room(pending: int, max_files: int | None, latest_first: bool = False) -> int:
    """How many more files the intake may record ahead of planning: a couple of batches, bounded, so a
    backlog stays in the queue (where it is visible and alarmed on) rather than in the index. With
    latestFirst the bound alone: a fresh file behind a backlog must reach the index to be taken first (SQS
    has no order to receive it by)."""
    cap = MAX_PENDING_FILES if max_files is None or latest_first else min(MAX_PENDING_FILES, AHEAD_BATCHES * max_files)
    return max(0, cap - pending)


def next_polls(polls: int, received: int, max_concurrency: int) -> int:
    """Receives for the next round: double while every receive comes back full, halve when the queue runs
    dry. Each receive is billed, so a trickle costs one poll at a time; a backlog goes wide, up to
    ROUND_WAVES times `max_concurrency` (that many run at once): a round's files are recorded with one
    snapshot, which costs what many receives do, so a backlog drains in few, big rounds."""
    if received >= polls * SQS_BATCH:
        return min(max_concurrency * ROUND_WAVES, polls * 2)
    return max(1, polls // 2)


def poll_wait(polls: int, long_poll_seconds: int) -> int:
    """A lone receive waits the whole long poll: the queue looked dry, and waiting is free. Parallel receives
    expect a backlog and wait at most a second: a round lasts as long as its slowest receive, and one that
    finds the queue dry mid-round must not hold the others for a whole long poll."""
    return long_poll_seconds if polls == 1 else min(1, long_poll_seconds)


def polls_for(room: int, polls: int) -> int:
    """No more receives than the room left can take."""
    return max(1, min(polls, -(-room // SQS_BATCH)))


def backfill_due(last_done_ms: int | None, now_ms: int, include_existing: bool,
                 interval_seconds: float | None) -> bool:
    """Whether to list basePath now: on the first start when asked to include existing files (or to list on
    an interval), then every interval after the last complete listing began."""
    if last_done_ms is None:
        return include_existing or interval_seconds is not None
    return interval_seconds is not None and now_ms - last_done_ms >= interval_seconds * 1000


def trim_due(last_trim_monotonic: float | None, now_monotonic: float) -> bool:
    return last_trim_monotonic is None or now_monotonic - last_trim_monotonic > TRIM_INTERVAL_SECONDS


def trim_cutoff_ms(now_ms: int, max_file_age_seconds: float) -> int:
    """Committed files whose event is older than this are forgotten: they are past maxFileAge, so a
    duplicate announcement of one is filtered as too old rather than ingested again."""
    return int(now_ms - max_file_age_seconds * 1000)


def split_bytes(files: list[S3File], max_partition_bytes: int, slots: int) -> int:
    """How big the pieces of a batch's split files are: maxPartitionBytes, or less when the batch's bytes
    spread over its slots are less, but not under the open cost. Spark's maxSplitBytes, so that one big
    file alone in a batch is read by every core, as Spark's file source reads it."""
    total = sum((f.size or 0) + SPLIT_OPEN_COST for f in files)
    return min(max_partition_bytes, max(SPLIT_OPEN_COST, total // max(1, slots)))


def split_files(files: list[S3File], splittable: Callable[[S3File], bool],
                max_partition_bytes: int) -> list[S3File | Piece]:
    """A splittable file bigger than `max_partition_bytes` becomes pieces of that many bytes (the last one
    shorter), as Spark's file source splits it, so that several tasks read it; every other file stays whole."""
    out: list[S3File | Piece] = []
    for f in files:
        if f.size is not None and f.size > max_partition_bytes and splittable(f):
            out.extend(Piece(f, start, length) for start, length in split_ranges(f.size, max_partition_bytes))
        else:
            out.append(f)
    return out


def item_size(item: S3File | Piece) -> int:
    """The bytes a file, or a piece of one, brings to a partition."""
    if isinstance(item, Piece):
        return (item.file.size or 0) if item.length is None else item.length
    return item.size or 0


def pack(files: list, size_of: Callable[[object], int], max_partition_bytes: int, slots: int,
         open_cost: int = OPEN_COST_BYTES) -> list[list]:
    """Pack files into partitions by bytes: at least `slots` partitions (the cores that read them), more
    only when the bytes need it (`max_partition_bytes` each). Every Python task has a fixed cost (about a
    quarter of a second on Spark 4.0), and a task reads its files in parallel, so few full partitions
    beat many small ones. Largest files first, each into the lightest partition."""
    if not files:
        return []
    costs = [(size_of(f) or 0) + open_cost for f in files]
    n = max(1, min(len(files), max(slots, -(-sum(costs) // max_partition_bytes))))
    heap = [(0, i) for i in range(n)]
    parts: list[list] = [[] for _ in range(n)]
    for cost, f in sorted(zip(costs, files), key=lambda cf: cf[0], reverse=True):
        load, i = heapq.heappop(heap)
        parts[i].append(f)
        heapq.heappush(heap, (load + cost, i))
    return [p for p in parts if p]
