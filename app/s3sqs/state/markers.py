"""Commit markers: what a consumer has committed, file by file, for the stack's source cleaner.

Each time batches are known to be in the sink, the source writes one small object under
`STATELOCATION/committed/` (in the stack: `checkpoints/<consumer>/source-state/committed/`): the files
of those batches that were read cleanly, each with its bucket, key, eTag and size, and the commit time.
The cleaner reads every consumer's markers, read-only, and nothing else of their state: a marker outlives
the index's own trimming (maxFileAge), costs one PUT per commit, and needs no RocksDB to read.

Writing the same range again (a run that died before its commit was recorded) writes the same name with a
later time: the cleaner then waits longer, never less. The names (the last seq, 12 digits) sort in commit
order, so the cleaner lists only those after the last one it has settled (cleaning/progress.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple

from ..core import fastjson
from ..core.files import S3File
from ..core.layout import MARKER_DIR
from .store import Store

VERSION = 1


class CommittedFile(NamedTuple):  # a tuple: one is made per committed file
    bucket: str
    key: str
    etag: str | None
    size: int | None

    @staticmethod
    def of(f: S3File) -> "CommittedFile":
        return CommittedFile(f.bucket, f.key, f.etag, f.size)


@dataclass(frozen=True)
class Marker:
    first: int          # the seqs (first, last) the commit covered
    last: int
    committed_ms: int
    files: tuple[CommittedFile, ...]


def marker_name(last: int) -> str:
    return f"{MARKER_DIR}/{last:012d}.json"


def encode(m: Marker) -> bytes:
    return fastjson.dumps_compact({"v": VERSION, "first": m.first, "last": m.last, "committed_ms": m.committed_ms,
                                   "files": [[f.bucket, f.key, f.etag, f.size] for f in m.files]})


def decode(raw: bytes) -> Marker:
    d = fastjson.loads(raw)
    if d.get("v") != VERSION:
        raise ValueError(f"commit marker version {d.get('v')!r} is not {VERSION}")
    return Marker(int(d["first"]), int(d["last"]), int(d["committed_ms"]),
                  tuple(CommittedFile(b, k, e, s) for b, k, e, s in d["files"]))


def marker_of(first: int, last: int, committed_ms: int, files: Iterable[S3File]) -> Marker | None:
    """The marker of a commit: its S3 files (local files are never cleaned); None when it has none."""
    kept = tuple(CommittedFile.of(f) for f in files if f.scheme == "s3")
    return Marker(first, last, committed_ms, kept) if kept else None


def write(store: Store, m: Marker) -> None:
    store.put_bytes(encode(m), marker_name(m.last))


def listed(store: Store, start: str = "") -> list[tuple[str, str]]:
    """(name, tag) of the markers named `start` (a marker_name) or later, oldest commit range first; the tag
    (the object's eTag) changes when a marker is written again. Names before `start` cost nothing."""
    return [(n, t) for n, t in store.list_from(MARKER_DIR, start) if n.endswith(".json")]


def read(store: Store, name: str) -> Marker | None:
    """One marker, or None when it is gone (between a listing and the read: nothing to learn from it)."""
    raw = store.get_bytes(name)
    return decode(raw) if raw is not None else None


def read_all(store: Store) -> Iterator[Marker]:
    """Every marker under the store, oldest commit range first."""
    for name in store.list(MARKER_DIR):
        if name.endswith(".json"):
            raw = store.get_bytes(name)
            if raw is not None:  # gone between the listing and the read: nothing to learn from it
                yield decode(raw)
