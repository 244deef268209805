"""Spark's Parquet file sink, committed by this job: the `_spark_metadata` log of a folder of Parquet files.

Spark's readers (spark.read.parquet, Spark's file source) read such a folder through its log alone: a file
is in the output once a log entry names it, so files of a failed or killed write are orphans that no
reader sees. Writing the log ourselves lets the source's read tasks write the files (job/direct_write.py)
while the folder stays what Spark's own file sink would have made of it, for Spark and for a later run of
Spark's file sink (`--table-writer spark`) alike.

The log, as Spark writes it (CompactibleFileStreamLog, FileStreamSinkLog): one file per batch, named by
its id, holding "v1" and one JSON line per file added. Every tenth batch's file ("9.compact", "19.compact")
lists every file since the start instead, and readers read only from the newest of those on, so no batch
id may be missing: a batch that wrote nothing gets an entry with no files. Exactly once: a batch whose id
is not above the log's newest is already in the output (Spark replays the last batch after a crash that
came after the log entry).
"""
from __future__ import annotations

import json
import logging
import uuid
from urllib.parse import quote

import pyarrow as pa
import pyarrow.fs as pafs

from .location import Location
from .target import SinkError, WrittenFile

log = logging.getLogger("s3sqs.sinks")

LOG_DIR = "_spark_metadata"
VERSION = "v1"
COMPACT = ".compact"
# spark.sql.streaming.fileSink.log.compactInterval's default, which readers assume when the log has no
# compaction file yet.
DEFAULT_COMPACT_INTERVAL = 10
# What Hadoop reports for an S3 object or a local file, and Spark copies into each entry.
BLOCK_SIZE = 32 << 20
# Characters a Hadoop path keeps as they are in its URI (java.net.URI quotes the others).
_URI_SAFE = "/:@!$&'()*+,;=-._~"


# --- the log's names and entries (pure) ---
def parse_name(name: str) -> tuple[int, bool] | None:
    """(batch id, whether it is a compaction file) of a log file's name; None for anything else (a
    temporary file, a checksum)."""
    stem = name.removesuffix(COMPACT)
    return (int(stem), stem != name) if stem.isdigit() else None


def compact_interval(compactions: list[int]) -> int:
    """The interval a log was compacted at, as Spark's readers work it out from its compaction files."""
    ids = sorted(compactions, reverse=True)
    if len(ids) >= 2:
        return ids[0] - ids[1]
    if ids:  # Spark's rule (CompactibleFileStreamLog.deriveCompactInterval) for a single compaction file
        n = ids[0] + 1
        if n <= DEFAULT_COMPACT_INTERVAL or DEFAULT_COMPACT_INTERVAL >= n / 2:
            return n
        return next((i for i in range(DEFAULT_COMPACT_INTERVAL, n // 2 + 1) if n % i == 0), n)
    return DEFAULT_COMPACT_INTERVAL


def is_compaction(batch_id: int, interval: int) -> bool:
    return (batch_id + 1) % interval == 0


def entry_name(batch_id: int, interval: int) -> str:
    return f"{batch_id}{COMPACT}" if is_compaction(batch_id, interval) else str(batch_id)


def hadoop_uri(uri: str) -> str:
    """A file's URI as Hadoop writes it (Path.toUri): "file:/dir/f" or "s3://bucket/key", the path quoted.
    Spark decodes it before it reads partition values from folder names, which are escaped themselves."""
    if uri.startswith("s3://"):
        bucket, _, key = uri.removeprefix("s3://").partition("/")
        return f"s3://{bucket}/{quote(key, safe=_URI_SAFE)}"
    return "file:" + quote(uri, safe=_URI_SAFE)


def file_status(f: WrittenFile) -> dict:
    """The entry of one file (Spark's SinkFileStatus)."""
    return {"path": hadoop_uri(f.uri), "size": f.size, "isDir": False, "modificationTime": f.modification_time_ms,
            "blockReplication": 1, "blockSize": BLOCK_SIZE, "action": "add"}


def encode(statuses: list[dict]) -> bytes:
    return "\n".join([VERSION, *(json.dumps(s, separators=(",", ":")) for s in statuses)]).encode()


def decode(data: bytes, name: str) -> list[dict]:
    lines = data.decode().split("\n")
    if lines[0].strip() != VERSION:
        raise SinkError(f"{LOG_DIR}/{name} starts with {lines[0][:20]!r}, not {VERSION!r}: a file sink log of a "
                        "Spark version this job cannot extend; write to a new --output")
    return [json.loads(line) for line in lines[1:] if line.strip()]


class FileSinkLogTarget:
    """A folder that Spark's file sink or this job's direct writes fill, through its `_spark_metadata` log."""

    def __init__(self, location: Location):
        self.location = location
        self.fs, base = location.filesystem()
        self.log_path = f"{base}/{LOG_DIR}"

    @property
    def write_location(self) -> Location:
        return self.location

    def ensure(self, schema: pa.Schema) -> None:
        """Spark's file sink checks no schema: each batch's files carry their own, and readers take one. A log
        this job cannot extend fails now, not at the first batch."""
        entries = self._entries()
        if entries:
            name = _name(max(entries), entries)
            decode(self._read(name), name)

    def committed_batch(self, query_id: str) -> int:
        """The log's newest batch, whatever query wrote it: as Spark's file sink, one query per folder."""
        entries = self._entries()
        return max(entries) if entries else -1

    def commit(self, files: list[WrittenFile], query_id: str, batch_id: int) -> bool:
        entries = self._entries()
        last = max(entries) if entries else -1
        if batch_id <= last:
            return False
        interval = compact_interval([b for b, compact in entries.items() if compact])
        for gap in range(last + 1, batch_id):  # batches that wrote nothing: readers need every id
            self._write(gap, [], interval, entries)
        self._write(batch_id, [file_status(f) for f in files], interval, entries)
        return True

    def compact(self, target_size: int, dry_run: bool = False, progress=print):
        raise SinkError("compact-table applies to --sink delta or iceberg; the parquet sink's readers take its "
                        "files as they are")

    def _entries(self) -> dict[int, bool]:
        """batch id -> whether its entry is a compaction file."""
        found = self.fs.get_file_info(pafs.FileSelector(self.log_path, allow_not_found=True))
        out = {}
        for info in found:
            parsed = parse_name(info.base_name)
            if parsed is not None:
                out[parsed[0]] = parsed[1]
        return out

    def _write(self, batch_id: int, statuses: list[dict], interval: int, entries: dict[int, bool]) -> None:
        compaction = is_compaction(batch_id, interval)
        if compaction:
            statuses = self._since_last_compaction(batch_id, interval, entries) + statuses
        self._put(entry_name(batch_id, interval), encode(statuses))
        entries[batch_id] = compaction
        if compaction:
            self._drop_before(batch_id - interval, entries)

    def _since_last_compaction(self, batch_id: int, interval: int, entries: dict[int, bool]) -> list[dict]:
        """The files of the previous compaction and of every batch since (Spark's readers would fail on a
        missing one too, and a compaction without its files would drop them from the output)."""
        out = []
        for b in range(max(0, batch_id - interval), batch_id):
            if b not in entries:
                raise SinkError(f"{self.location.join(LOG_DIR)} has no entry for batch {b}, which compacting "
                                f"batch {batch_id} needs; the log was changed by hand: write to a new --output")
            out += decode(self._read(_name(b, entries)), _name(b, entries))
        return out

    def _drop_before(self, batch_id: int, entries: dict[int, bool]) -> None:
        """Entries before the previous compaction: no reader reads them any more, and Spark lists the log's
        folder to find its newest entry, so they would slow every batch down."""
        for b in [b for b in entries if b < batch_id]:
            self.fs.delete_file(f"{self.log_path}/{_name(b, entries)}")
            del entries[b]

    def _read(self, name: str) -> bytes:
        with self.fs.open_input_stream(f"{self.log_path}/{name}") as f:
            return f.read()

    def _put(self, name: str, data: bytes) -> None:
        path = f"{self.log_path}/{name}"
        if not self.location.is_s3:
            # Readers list the folder: they must see the whole entry or none. Spark skips dot files.
            self.fs.create_dir(self.log_path, recursive=True)
            tmp = f"{self.log_path}/.{name}.{uuid.uuid4().hex}.tmp"
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            self.fs.move(tmp, path)
            return
        with self.fs.open_output_stream(path) as out:  # an S3 object appears whole when its upload ends
            out.write(data)


def _name(batch_id: int, entries: dict[int, bool]) -> str:
    """An existing entry's file name."""
    return f"{batch_id}{COMPACT}" if entries[batch_id] else str(batch_id)
