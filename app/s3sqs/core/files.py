"""The one record of a file, from the message that announces it to the task that reads it, and its keys.

Events parse into an `S3File`; the index stores it (`to_json`), numbered with its sequence number; the
planner packs it into partitions; the reader opens it. A file is known by its dedup key: bucket+key, plus
its eTag or version when overwrites count as new files, or plus a reprocess marker when a reprocess run
re-queues it. `dedup_key`, `reprocess_key` and `key_base` are the only code that spells that key.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

from .fastjson import dumps_compact, loads
from .units import from_ms

# Separates a dedup key's object part (bucket/key) from its variant (eTag, version or reprocess marker).
_VARIANT = "\x00"
LISTED = "Listing"  # the event name of a file the backfill found by listing, not through a message
INVENTORIED = "Inventory"  # ... found in an S3 Inventory report
# A null partition value in a Hive-style folder name, as Hive and Spark write it.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class S3File:
    bucket: str
    key: str
    size: int | None = None
    etag: str | None = None
    version_id: str | None = None
    event_ms: int | None = None      # when the object was created, as the event says (ms since the epoch)
    event_name: str | None = None    # "ObjectCreated:Put", ...; LISTED / INVENTORIED for a backfilled file
    seq: int = 0                     # its place in the index; 0 until the index numbers it
    scheme: str = "s3"               # "file" only for local files (tests and benchmarks)

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"

    @property
    def path(self) -> str:
        """The path a pyarrow filesystem of this scheme opens."""
        return f"/{self.key}" if self.scheme == "file" else f"{self.bucket}/{self.key}"

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def event_time(self) -> datetime | None:
        return from_ms(self.event_ms)

    @property
    def listed(self) -> bool:
        return self.event_name == LISTED

    def numbered(self, seq: int) -> "S3File":
        # A copy of the fields with a new seq, without the frozen __init__'s call per field: every recorded
        # file passes here.
        out = object.__new__(S3File)
        object.__setattr__(out, "__dict__", {**self.__dict__, "seq": seq})
        return out

    def to_json(self) -> bytes:
        # Only what is set: the index holds one of these per file. (Plain attribute reads: asdict's deep
        # copies cost more than the rest of recording a file.)
        d = self.__dict__
        out = {k: d[k] for k in _FIELDS if d[k] is not None}
        if out.get("scheme") == _DEFAULT_SCHEME:
            del out["scheme"]
        return dumps_compact(out)

    @staticmethod
    def from_json(raw: bytes) -> "S3File":
        return S3File(**loads(raw))


_DEFAULT_SCHEME = "s3"  # not written: nearly every file has it
_FIELDS = tuple(f.name for f in fields(S3File))


def dedup_key(f: S3File, allow_overwrites: bool) -> str:
    """bucket+key; with overwrites allowed, a new eTag (or version) is a new file."""
    base = f"{f.bucket}/{f.key}"
    return f"{base}{_VARIANT}{f.version_id or f.etag or ''}" if allow_overwrites else base


def reprocess_key(f: S3File, marker: str) -> str:
    """The key of a file re-queued by a reprocess run: new, so it is planned again, and unique per run."""
    return f"{f.bucket}/{f.key}{_VARIANT}{marker}"


def key_base(key: str) -> str:
    """The bucket/key part of a dedup key, whatever its variant."""
    return key.split(_VARIANT, 1)[0]


def key_variants_prefix(bucket_key: str) -> str:
    """What every variant of an object's dedup key starts with."""
    return bucket_key + _VARIANT


@dataclass(frozen=True)
class Piece:
    """What one task reads of a file: all of it, or the byte range [start, start + length) of a big
    splittable file (the reader finishes the range's last line and skips the line it starts in)."""
    file: S3File
    start: int = 0
    length: int | None = None  # None: to the end of the file

    @staticmethod
    def of(item: "S3File | Piece") -> "Piece":
        return item if isinstance(item, Piece) else Piece(item)

    @property
    def whole(self) -> bool:
        return self.start == 0 and (self.length is None or self.length == self.file.size)

    @property
    def end(self) -> int | None:
        """Where the range ends (None: at the end of the file)."""
        if self.length is None or (self.file.size is not None and self.start + self.length >= self.file.size):
            return None
        return self.start + self.length

    @property
    def block(self) -> tuple[int, int | None]:
        """(file_block_start, file_block_length) as Spark reports them in `_metadata`."""
        return self.start, self.file.size if self.whole else self.length
