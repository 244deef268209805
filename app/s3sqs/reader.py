"""Executor side: read a partition's files and yield Arrow batches in exactly the declared schema.

Everything needed here travels inside the partition (the reader object in a task is a copy frozen at
query start), so this module depends only on pyarrow and its arguments. Small files are latency-bound
(one GET each), so a task reads several at once; pyarrow releases the GIL while it fetches and parses.

A file's fate: read; or missing (deleted after it was announced: recorded, like Spark's
ignoreMissingFiles); or bad (cannot be parsed: quarantined by default, or the batch fails when
`onBadFile` is `fail`). A transient fault is retried; one that outlasts the retries fails the batch,
which Spark retries: a good file is never set aside because the network was slow.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from . import quarantine
from .files import S3File
from .formats import Parsed, Parsing, parse, parse_parquet
from .objects import WHOLE_FILE_BYTES, Endpoint, Filesystems, classify, fetch, with_retries

log = logging.getLogger("s3sqs.reader")

# Columns the source fills itself when the declared schema has them.
META_PATH, META_SIZE, META_EVENT_TIME = "_file_path", "_file_size", "_file_event_time"
META_COLUMNS = (META_PATH, META_SIZE, META_EVENT_TIME)
TARGET_BATCH_ROWS = 1 << 17
READ_THREADS = 8
BYTES_IN_FLIGHT = 512 << 20  # files held in memory at once by one task, at most (one file may exceed it)
FAIL, QUARANTINE = "fail", "quarantine"


class FileReadError(RuntimeError):
    """A file could not be read or does not fit the schema; the message names the file and the fix."""


@dataclass(frozen=True)
class ReadSpec:
    parsing: Parsing
    endpoint: Endpoint = field(default_factory=Endpoint)
    partition_columns: tuple[str, ...] = ()
    base_path: str | None = None
    quarantine_location: str = ""
    on_bad_file: str = QUARANTINE


@dataclass
class _Outcome:
    file: S3File
    table: pa.Table | None = None
    parsed: Parsed | None = None
    error: BaseException | None = None


def read_partition(files: list[S3File], spec: ReadSpec, schema: pa.Schema, batch_end: int):
    """Yield RecordBatches of `schema` for every readable file, few and large."""
    filesystems = Filesystems(spec.endpoint)
    budget = _ByteBudget(BYTES_IN_FLIGHT)
    fields = data_fields(schema, spec)

    def load(f: S3File) -> _Outcome:
        with budget.hold(f.size or 0):
            try:
                parsed = with_retries(f.uri, lambda: _read_file(filesystems, f, spec, fields))
                return _Outcome(f, conform(parsed.table, schema, f, spec), parsed)
            except Exception as e:  # every failure names the file; nothing is dropped silently
                return _Outcome(f, error=e)

    tables, rows = [], 0
    counts = {"files": 0, "rows": 0, quarantine.QUARANTINED: 0, quarantine.MISSING: 0, "malformed": 0}
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, max(1, len(files)))) as pool:
        for o in pool.map(load, files):
            if o.error is not None:
                counts[_settle_failure(filesystems, o, spec, batch_end)] += 1
                continue
            if o.parsed.malformed:
                counts["malformed"] += o.parsed.malformed
                quarantine.write_record(filesystems, spec.quarantine_location, batch_end, o.file,
                                        quarantine.MALFORMED_ROWS, malformed=o.parsed.malformed,
                                        dropped=o.parsed.dropped)
            counts["files"] += 1
            counts["rows"] += o.table.num_rows
            if o.table.num_rows >= TARGET_BATCH_ROWS // 4:  # big enough to go as it is, without a copy
                yield from _batches([o.table], schema)
                continue
            tables.append(o.table)
            rows += o.table.num_rows
            if rows >= TARGET_BATCH_ROWS:
                yield from _batches(tables, schema)
                tables, rows = [], 0
    if tables:
        yield from _batches(tables, schema)
    if counts["quarantined"] or counts["missing"] or counts["malformed"]:
        log.warning("s3-sqs read %d files (%d rows) of batch ending %d; %d quarantined, %d missing, "
                    "%d malformed rows", counts["files"], counts["rows"], batch_end, counts["quarantined"],
                    counts["missing"], counts["malformed"])


def _settle_failure(filesystems: Filesystems, o: _Outcome, spec: ReadSpec, batch_end: int) -> str:
    """Record a file that could not be read, or raise when the batch must fail. Returns its status."""
    f, e = o.file, o.error
    kind = classify(e)
    detail = f"{type(e).__name__}: {e}"
    if kind == "transient":
        raise FileReadError(f"s3-sqs could not read {f.uri}: {detail} (still failing after retries; the batch "
                            "fails and Spark runs it again)") from e
    if kind == "missing":
        log.warning("s3-sqs: %s is gone (deleted after it was announced?); recorded as missing", f.uri)
        quarantine.write_record(filesystems, spec.quarantine_location, batch_end, f, quarantine.MISSING, detail)
        return quarantine.MISSING
    if spec.on_bad_file == FAIL:
        raise FileReadError(
            f"s3-sqs could not read {f.uri}: {detail}. Fix or delete the file, or set the option "
            "onBadFile=quarantine to set bad files aside and go on") from e
    quarantine.write_record(filesystems, spec.quarantine_location, batch_end, f, quarantine.QUARANTINED, detail)
    log.error("s3-sqs quarantined %s: %s (record and copy under %s)", f.uri, detail,
              f"{spec.quarantine_location}/{quarantine.batch_dir(batch_end)}")
    return quarantine.QUARANTINED


def _batches(tables, schema):
    """Few, large batches: small files' rows are combined (a cheap copy), a big file's chunks go as they are."""
    combined = pa.concat_tables(tables)
    if len(tables) > 1:
        combined = combined.combine_chunks()
    for b in combined.to_batches(max_chunksize=TARGET_BATCH_ROWS):
        yield b.cast(schema) if b.schema != schema else b


def data_fields(schema: pa.Schema, spec: ReadSpec) -> list[pa.Field]:
    skip = set(spec.partition_columns) | set(META_COLUMNS) | {spec.parsing.rescued_column}
    return [f for f in schema if f.name not in skip]


def _read_file(filesystems: Filesystems, f: S3File, spec: ReadSpec, fields: list[pa.Field]) -> Parsed:
    fs = filesystems.of(f)
    if spec.parsing.file_format == "parquet" and (f.size is None or f.size > WHOLE_FILE_BYTES):
        with fs.open_input_file(f.path) as fh:  # random access: only the declared columns are fetched
            return parse_parquet(fh, fields)
    compression = None if spec.parsing.file_format == "parquet" else "detect"  # .gz and friends
    return parse(fetch(fs, f, compression), fields, spec.parsing)


def partition_values(key: str, base_path: str | None) -> dict[str, str | None]:
    """Hive-style `k=v` directory segments of a key (below basePath when one is set)."""
    if base_path:
        prefix = urlparse(base_path).path.lstrip("/")
        if key.startswith(prefix):
            key = key[len(prefix):]
    out: dict[str, str | None] = {}
    for seg in key.split("/")[:-1]:
        if "=" in seg:
            k, v = seg.split("=", 1)
            v = unquote(v)
            out[k] = None if v == "__HIVE_DEFAULT_PARTITION__" else v
    return out


def conform(table: pa.Table, schema: pa.Schema, f: S3File, spec: ReadSpec) -> pa.Table:
    """Select, fill and cast columns by name to exactly `schema`."""
    n = table.num_rows
    parts = partition_values(f.key, spec.base_path) if spec.partition_columns else {}
    arrays = []
    for fld in schema:
        if fld.name in spec.partition_columns:
            if fld.name not in parts:
                raise ValueError(f"partition column {fld.name!r} has no '{fld.name}=value' segment in the key")
            arr = pa.array([parts[fld.name]] * n, pa.string()).cast(fld.type)
        elif fld.name == META_PATH:
            arr = pa.array([f.uri] * n, pa.string()).cast(fld.type)
        elif fld.name == META_SIZE:
            arr = pa.array([f.size] * n, pa.int64()).cast(fld.type)
        elif fld.name == META_EVENT_TIME:
            arr = pa.array([f.event_ms] * n, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(fld.type)
        elif fld.name in table.column_names:
            arr = table.column(fld.name)
            if arr.type != fld.type:
                arr = pc.cast(arr, fld.type)
        else:
            arr = pa.nulls(n, fld.type)
        if not fld.nullable and arr.null_count:
            raise ValueError(f"column {fld.name!r} is declared NOT NULL but has {arr.null_count} null values")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


class _ByteBudget:
    """Bounds the bytes of files held in memory at once; a file larger than the budget goes alone."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._cond = threading.Condition()

    def hold(self, n: int):
        budget = self

        class _Held:
            def __enter__(self):
                with budget._cond:
                    budget._cond.wait_for(lambda: budget.used == 0 or budget.used + n <= budget.limit)
                    budget.used += n

            def __exit__(self, *exc):
                with budget._cond:
                    budget.used -= n
                    budget._cond.notify_all()
        return _Held()
