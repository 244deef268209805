"""What every table sink is: the files a batch wrote, and the protocol a table format implements so that
the per-batch commit (stream.py), compaction (ops/compaction) and the demo treat Delta and Iceberg alike.
A new table format is one module implementing `TableTarget`, opened by its sink kind's `open_target` (kinds/)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

import pyarrow as pa

from ..core.errors import UsageError
from .location import Location

if TYPE_CHECKING:
    from .compaction import FileSizes


class SinkError(UsageError):
    """A sink setting or table does not fit; the message names the flag or table and how to fix it."""


@dataclass(frozen=True)
class WrittenFile:
    """One Parquet data file an executor wrote for a batch: everything a table commit needs."""
    uri: str                     # absolute: s3://bucket/key or /local/path
    relative_path: str           # below the table root, '/'-separated, not URL-encoded
    size: int
    rows: int
    partition: dict = field(default_factory=dict)   # column -> string value, or None for null
    stats: str = ""              # Delta statistics JSON
    modification_time_ms: int = 0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "WrittenFile":
        return cls(**d)

    def to_row(self) -> dict:
        """The file as a row of WRITTEN_FILES (a direct write's read task hands it to the sink so)."""
        return {**asdict(self), "partition": json.dumps(self.partition)}

    @classmethod
    def from_row(cls, row: dict) -> "WrittenFile":
        return cls(**{**row, "partition": json.loads(row["partition"])})


# The rows of a direct write (job/direct_write.py): one per data file its read tasks wrote; as Arrow (its
# tasks have no Spark session to parse DDL) and as the DDL of the same schema.
WRITTEN_FILES_ARROW = pa.schema([("uri", pa.string()), ("relative_path", pa.string()), ("size", pa.int64()),
                                 ("rows", pa.int64()), ("partition", pa.string()), ("stats", pa.string()),
                                 ("modification_time_ms", pa.int64())])
WRITTEN_FILES = ", ".join(f"{f.name} {'STRING' if f.type == pa.string() else 'BIGINT'}" for f in WRITTEN_FILES_ARROW)


class TableTarget(Protocol):
    """A table this job commits to exactly once per micro-batch."""

    def ensure(self, schema: pa.Schema) -> None:
        """Create the table, or check that the existing one fits the output's schema and partitioning."""

    @property
    def write_location(self) -> Location:
        """Where the executors write a batch's data files."""

    def committed_batch(self, query_id: str) -> int:
        """The last batch of this query in the table, or -1."""

    def commit(self, files: list[WrittenFile], query_id: str, batch_id: int) -> bool:
        """Add the files and record (query id, batch id) in one transaction; False if already there."""

    def compact(self, target_size: int, dry_run: bool = False,
                progress: Callable[[str], None] = print) -> tuple["FileSizes", "FileSizes"]:
        """Rewrite small files while the stream runs; (before, after)."""

