"""What becomes of each received message and of each file it announces: new, a duplicate, too old, or not
matching pathGlobFilter (`decide`, `plan_round`). Pure: the intake, the backfill and the inventory report feed
it what they received or listed, and act on what it returns."""
from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterable, NamedTuple, Sequence

from ..core import counters
from ..core.files import S3File, dedup_key
from ..core.vocabulary import FileOutcome, MessageFate
from .events import ParsedBody

NEW, DUPLICATE, TOO_OLD, GLOB_MISMATCH = FileOutcome  # what becomes of an announced file

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
