"""The fan-out rule, pure: which consumers must have committed a key, and what becomes of the file now.

A file may go only when every consumer whose filters match its key (its prefix, or the notified prefix when
it has none, and the notified suffix) has committed exactly the object that is there now (same eTag and
size), and the retention has passed since the last of those commits. Anything else keeps it: a consumer
that has not committed it, an object that changed since, a key no consumer reads any more.

`by_markers` judges a key from the commits alone; only a key it finds due is looked at in the source
(`judge`, with the object's HEAD), so a run costs no request for a key that waits or is in its retention.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..core.units import iso
from ..core.vocabulary import CleanStatus


@dataclass(frozen=True)
class Consumer:
    name: str
    prefix: str    # the prefix it reads: its own, else the notified one ("" = the whole bucket)
    suffix: str = ""  # the notified suffix

    def matches(self, key: str) -> bool:
        return key.startswith(self.prefix) and key.endswith(self.suffix)


@dataclass(frozen=True)
class Commit:
    """One consumer's commit of one object, from its commit markers."""
    consumer: str
    etag: str | None
    size: int | None
    committed_ms: int


@dataclass(frozen=True)
class Head:
    """The object as it is in the source now."""
    etag: str
    size: int
    version_id: str | None = None


@dataclass(frozen=True)
class Verdict:
    status: CleanStatus
    detail: str
    at_ms: int | None = None  # when it is due (retention, due), or was cleaned (archived, deleted)


def same_etag(a: str | None, b: str | None) -> bool:
    """eTags compared without their quotes (S3 quotes them in headers, events do not)."""
    return a is not None and b is not None and a.strip('"') == b.strip('"')


def matching(consumers: Iterable[Consumer], key: str) -> list[Consumer]:
    return [c for c in consumers if c.matches(key)]


def by_markers(key: str, consumers: Iterable[Consumer], commits: Iterable[Commit], retention_ms: int,
               now_ms: int) -> Verdict:
    """What the commits alone say of `key`, before the object is looked at: UNMATCHED, WAITING (a matching
    consumer has no commit of it), RETENTION (until the newest commit of any eTag by a matching consumer,
    plus the retention) or DUE. Only a DUE key needs the object (`judge`): the newest commit of any eTag is
    never older than the newest of the object there, so RETENTION here is never earlier than judge's, and a
    changed object is found when its key falls due."""
    readers = matching(consumers, key)
    if not readers:
        return Verdict(CleanStatus.UNMATCHED, "no consumer of the stack reads this key now: kept")
    names = [c.name for c in readers]
    mine = [c for c in commits if c.consumer in names]
    missing = [n for n in names if not any(c.consumer == n for c in mine)]
    if missing:
        return Verdict(CleanStatus.WAITING, f"not yet committed by {', '.join(missing)}")
    last = max(c.committed_ms for c in mine)
    due = last + retention_ms
    if now_ms < due:
        return Verdict(CleanStatus.RETENTION, f"committed by {', '.join(names)}; retention until {iso(due)}", due)
    return Verdict(CleanStatus.DUE, f"committed by {', '.join(names)}, last at {iso(last)}", due)


def judge(key: str, consumers: Iterable[Consumer], commits: Iterable[Commit], head: Head | None,
          retention_ms: int, now_ms: int) -> Verdict:
    """What becomes of `key` now, given the stack's consumers, their commits of it and the object there."""
    readers = matching(consumers, key)
    if not readers:
        return Verdict(CleanStatus.UNMATCHED, "no consumer of the stack reads this key now: kept")
    if head is None:
        return Verdict(CleanStatus.GONE, "not in the source bucket (or not readable by this role), and not cleaned by the cleaner")
    by: dict[str, list[Commit]] = {c.name: [] for c in readers}
    for c in commits:
        if c.consumer in by:
            by[c.consumer].append(c)
    changed = [n for n, cs in by.items() if cs and not any(_is(head, c) for c in cs)]
    if changed:
        seen = sorted({f"{c.etag} ({c.size} bytes)" for n in changed for c in by[n]})
        return Verdict(CleanStatus.CHANGED, f"changed since it was ingested: it is {head.etag.strip(chr(34))} "
                                            f"({head.size} bytes) now, {', '.join(changed)} committed "
                                            f"{', '.join(seen)}: left alone")
    missing = [n for n, cs in by.items() if not cs]
    if missing:
        return Verdict(CleanStatus.WAITING, f"not yet committed by {', '.join(missing)}")
    last = max(c.committed_ms for cs in by.values() for c in cs if _is(head, c))
    due = last + retention_ms
    if now_ms < due:
        return Verdict(CleanStatus.RETENTION, f"committed by {', '.join(by)}; retention until {iso(due)}", due)
    return Verdict(CleanStatus.DUE, f"committed by {', '.join(by)}, last at {iso(last)}", due)


def _is(head: Head, c: Commit) -> bool:
    return same_etag(head.etag, c.etag) and (c.size is None or c.size == head.size)
