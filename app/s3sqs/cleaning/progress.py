"""The cleaner's durable progress, so that a run costs what is new or due, not the whole history: one small
JSON object beside the journal (`source-cleaning/progress.json`), written at the end of a run that applied,
after its journal. It holds:

- per consumer, a watermark: the newest commit marker such that every key of it and of every older marker
  of that consumer is settled (archived, deleted, gone, changed or unmatched: nothing a later run would do
  to it). The next run lists that consumer's markers from there on (S3's StartAfter) and reads only the
  later ones. A key committed again later is in a later marker, so it is judged again.
- the newest journal chunk such that no key recorded in it, or in an older chunk, is in a marker after a
  watermark: the next run reads only the chunks after it.

A kill before the progress is written leaves the previous one: the next run reads more again, and the
journal and the eTag conditions (actions.py) see to it that nothing is cleaned twice.

A consumer whose seqs start over (its state emptied or moved) is read again from its first marker, never
skipped: a watermark names where the markers were, and the marker's eTag and seq range; a watermark marker
that is gone or was written again, or a later marker whose range begins inside an earlier one's (other than
the same commit written again over a longer range, after a crash), sends the cleaner back to the first.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Iterable

from ..core.errors import UsageError
from ..core.vocabulary import CleanStatus
from ..state.store import Store

NAME = "progress.json"
VERSION = 1
SETTLED = frozenset({CleanStatus.ARCHIVED, CleanStatus.DELETED, CleanStatus.GONE, CleanStatus.CHANGED,
                     CleanStatus.UNMATCHED})


class ProgressError(UsageError):
    """The cleaner's progress object cannot be read: the operator deletes it (the message says so)."""


@dataclass(frozen=True)
class Mark:
    """A consumer's watermark: its newest marker up to which everything is settled."""
    location: str   # where its markers are: another location starts from its first marker
    name: str       # the marker's name (committed/<last seq>.json)
    tag: str        # its eTag when it was read: another one means it was written again
    first: int
    last: int


@dataclass(frozen=True)
class Seen:
    """A marker read by this run: its name and tag, its seq range, and the keys of the cleaned bucket in it."""
    name: str
    tag: str
    first: int
    last: int
    keys: frozenset[str]


@dataclass(frozen=True)
class Progress:
    marks: dict[str, Mark] = field(default_factory=dict)   # by consumer name
    journal: str = ""                                       # the newest journal chunk no longer needed


def read(store: Store) -> Progress:
    raw = store.get_bytes(NAME)
    if raw is None:
        return Progress()
    try:
        d = json.loads(raw)
        if d.get("v") != VERSION:
            raise ValueError(f"version {d.get('v')!r} is not {VERSION}")
        return Progress({n: Mark(**m) for n, m in d["marks"].items()}, str(d["journal"]))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ProgressError(f"the cleaner's progress {NAME} in its journal location cannot be read ({e}): delete "
                            "it, and the next run reads every marker and the whole journal again") from None


def write(store: Store, p: Progress) -> None:
    store.put_bytes(json.dumps({"v": VERSION, "marks": {n: asdict(m) for n, m in sorted(p.marks.items())},
                                "journal": p.journal}, separators=(",", ":")).encode(), NAME)


def starts_over(mark: Mark, seen: Iterable[Seen]) -> str | None:
    """Why the markers after `mark` show that the consumer's seqs started over, or None. (Pure.)"""
    prev_first, prev_last, prev_name = mark.first, mark.last, mark.name
    for s in seen:
        if s.first <= prev_last and s.first != prev_first:
            return f"marker {s.name} covers seqs {s.first}-{s.last}, inside those of {prev_name}"
        prev_first, prev_last, prev_name = s.first, s.last, s.name
    return None


def advance(location: str, mark: Mark | None, seen: list[Seen], statuses: dict[str, CleanStatus]) -> Mark | None:
    """The watermark after a run: past each marker read, oldest first, while all its keys are settled. (Pure.)"""
    for s in seen:
        if not all(statuses.get(k) in SETTLED for k in s.keys):
            break
        mark = Mark(location, s.name, s.tag, s.first, s.last)
    return mark


def after(mark: Mark | None, seen: list[Seen]) -> list[Seen]:
    """The markers read that lie after a watermark: the next run reads them again."""
    return [s for s in seen if mark is None or s.name > mark.name]


def journal_after(current: str, chunks: list[tuple[str, frozenset[str]]], pending: set[str]) -> str:
    """The newest chunk, oldest first, up to which no chunk records a key still pending. (Pure.)"""
    for name, keys in chunks:
        if keys & pending:
            break
        current = name
    return current
