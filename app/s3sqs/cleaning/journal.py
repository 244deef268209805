"""What the cleaner did, file by file, with the time: small JSON objects under the stack's journal location
(`s3://<checkpoint bucket>/source-cleaning/`), one per chunk of cleaned files, written right after that chunk.
`source-state clean` shows a cleaned file's status and time from here. A kill before a chunk is written
loses only the times of that chunk: its files are then shown as gone from the source. Chunks are named by
their run's start (wall clock), so the cleaner lists only those after the last one it no longer needs.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Iterator

from ..state.store import Store

DONE_DIR = "cleaned"


@dataclass(frozen=True)
class Cleaned:
    bucket: str
    key: str
    etag: str
    size: int
    action: str             # CleanStatus.ARCHIVED or DELETED
    at_ms: int
    archive_uri: str | None = None


def write(store: Store, run_id: str, chunk: int, done: list[Cleaned]) -> None:
    if done:
        store.put_bytes(json.dumps([asdict(c) for c in done], separators=(",", ":")).encode(),
                        f"{DONE_DIR}/{run_id}-{chunk:06d}.json")


def read_all(store: Store) -> Iterator[Cleaned]:
    for _, records in read_after(store, ""):
        yield from records


def read_after(store: Store, after: str) -> Iterator[tuple[str, list[Cleaned]]]:
    """(name, records) of each chunk named after `after` ("": every chunk), oldest run first: a chunk's name
    starts with its run's start time."""
    for name, _ in store.list_from(DONE_DIR, after):
        if name > after:
            raw = store.get_bytes(name)
            yield name, [Cleaned(**d) for d in (json.loads(raw) if raw else ())]
