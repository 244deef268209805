"""Pure decisions shared by the table sinks: column types, partition folders, file names, per-file
statistics and which small files to combine. No I/O here; every function has unit tests.
"""
from __future__ import annotations

import datetime as dt
import json
import statistics
from dataclasses import asdict, dataclass, field
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from ..options import OptionError

TABLE_FORMATS = ("delta", "iceberg")
# What Hive and Spark write for a null partition value; Delta and Iceberg readers take their partition
# values from the table's metadata, so the folder name only has to be unique and readable.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Partition columns hold one value per file, spelled out in folder names and Delta's log.
PARTITION_TYPES = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DateType, T.BooleanType)
# Delta's data skipping trusts min/max exactly; long strings would bloat every log entry.
MAX_STAT_STRING = 64


class SinkError(OptionError):
    """A sink setting or table does not fit; the message names the flag or table and how to fix it. An
    OptionError, so the job reports it like any wrong option: one line, exit code 2."""


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


# --- column types ---------------------------------------------------------------------------------

def table_arrow_schema(schema: T.StructType, table_format: str) -> pa.Schema:
    """The Arrow schema of the table's files for a Spark schema. Iceberg has no 8/16-bit integers, and
    both formats store instants as UTC microseconds."""
    if table_format not in TABLE_FORMATS:
        raise SinkError(f"unknown table format {table_format!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return pa.schema([_arrow_field(f.name, f.dataType, f.nullable, table_format) for f in schema.fields])


def _arrow_field(name: str, t: T.DataType, nullable: bool, fmt: str) -> pa.Field:
    return pa.field(name, _arrow_type(name, t, fmt), nullable=nullable)


def _arrow_type(name: str, t: T.DataType, fmt: str) -> pa.DataType:
    small_int = pa.int32() if fmt == "iceberg" else None
    simple = [
        (T.BooleanType, pa.bool_()), (T.ByteType, small_int or pa.int8()), (T.ShortType, small_int or pa.int16()),
        (T.IntegerType, pa.int32()), (T.LongType, pa.int64()), (T.FloatType, pa.float32()),
        (T.DoubleType, pa.float64()), (T.StringType, pa.string()), (T.CharType, pa.string()),
        (T.VarcharType, pa.string()), (T.BinaryType, pa.binary()), (T.DateType, pa.date32()),
        (T.TimestampNTZType, pa.timestamp("us")), (T.TimestampType, pa.timestamp("us", tz="UTC")),
    ]
    for cls, arrow in simple:
        if isinstance(t, cls):
            return arrow
    if isinstance(t, T.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, T.ArrayType):
        return pa.list_(_arrow_field("element", t.elementType, t.containsNull, fmt))
    if isinstance(t, T.MapType):
        return pa.map_(_arrow_type(name, t.keyType, fmt),
                       _arrow_field("value", t.valueType, t.valueContainsNull, fmt))
    if isinstance(t, T.StructType):
        return pa.struct([_arrow_field(f.name, f.dataType, f.nullable, fmt) for f in t.fields])
    raise SinkError(f"column {name!r} has type {t.simpleString()}, which the {fmt} sink cannot write; "
                    "cast it in --transform (for example to STRING)")


def file_schema(table_schema: pa.Schema, partition_by: tuple[str, ...], table_format: str) -> pa.Schema:
    """Delta keeps partition values only in its log; Iceberg's add-files reads them from the file."""
    if table_format == "delta":
        return pa.schema([f for f in table_schema if f.name not in partition_by])
    return table_schema


def conform(batch: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.Table:
    """Select the table's columns by name and cast (session time zone to UTC, large to plain strings)."""
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    return table.select(schema.names).cast(schema)


def check_partition_columns(schema: T.StructType, partition_by: tuple[str, ...]) -> None:
    fields = {f.name: f for f in schema.fields}
    missing = [c for c in partition_by if c not in fields]
    if missing:
        raise SinkError(f"--partition-by columns {missing} are not in the output; the output has "
                        f"{', '.join(fields)} (after --transform, if any)")
    for c in partition_by:
        if not isinstance(fields[c].dataType, PARTITION_TYPES):
            raise SinkError(f"--partition-by column {c!r} has type {fields[c].dataType.simpleString()}; "
                            "partition by a string, integer, date or boolean column")
    if len(partition_by) == len(fields):
        raise SinkError("--partition-by names every output column; a table needs at least one data column")


# --- partitions and names -------------------------------------------------------------------------

def partition_string(value) -> str | None:
    """A partition value as Delta's log and the folder name spell it. Empty strings become null, as
    Spark does for partitioned writes."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


def escape_path_segment(text: str) -> str:
    """A partition value in a folder name: everything but letters, digits and -_.~ percent-encoded, as
    delta-rs writes them (plain ASCII, so every object store and shell takes the name as it is)."""
    return quote(text, safe="")


def partition_path(columns: tuple[str, ...], values: tuple[str | None, ...]) -> str:
    return "/".join(f"{escape_path_segment(c)}={NULL_PARTITION if v is None else escape_path_segment(v)}"
                    for c, v in zip(columns, values))


def data_file_name(batch_id: int, write_id: str, task: int, attempt: int, seq: int) -> str:
    """Unique per batch, write attempt, task attempt and file: a replayed or retried write never
    overwrites a file an earlier attempt may have committed."""
    return f"part-{batch_id:06d}-{write_id}-{task:05d}-{attempt}-{seq:03d}.zstd.parquet"


def split_by_keys(table: pa.Table, keys: tuple[str, ...]) -> list[tuple[tuple, pa.Table]]:
    """The rows of each distinct partition key, keyed by the Python values of the key columns."""
    if table.num_rows == 0:
        return []
    if not keys:
        return [((), table)]
    distinct = table.select(list(keys)).group_by(list(keys), use_threads=False).aggregate([])
    out = []
    for row in distinct.to_pylist():
        mask = None
        for k in keys:
            col = table.column(k)
            m = pc.is_null(col) if row[k] is None else pc.fill_null(pc.equal(col, pa.scalar(row[k], col.type)), False)
            mask = m if mask is None else pc.and_(mask, m)
        out.append((tuple(row[k] for k in keys), table.filter(mask)))
    return out


# --- Delta statistics -----------------------------------------------------------------------------

def _stat_value(v):
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


def _stats_type(t: pa.DataType) -> bool:
    # Integers, dates and strings have exact, portable min/max. Floats (NaN) and timestamps (Delta
    # readers truncate them to milliseconds, which would skip rows wrongly) get null counts only.
    return pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_string(t)


class FileStats:
    """Running Delta statistics of one file: numRecords, and per top-level column nullCount and, where
    exact and portable, minValues/maxValues."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows = 0
        self.nulls = {f.name: 0 for f in schema}
        self.mins: dict = {}
        self.maxs: dict = {}
        self.unbounded: set[str] = set()

    def update(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        for f in self.schema:
            col = table.column(f.name)
            self.nulls[f.name] += col.null_count
            if not _stats_type(f.type) or f.name in self.unbounded or col.null_count == len(col):
                continue
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if isinstance(lo, str) and (len(lo) > MAX_STAT_STRING or len(hi) > MAX_STAT_STRING):
                self.unbounded.add(f.name)
                self.mins.pop(f.name, None)
                self.maxs.pop(f.name, None)
                continue
            self.mins[f.name] = lo if f.name not in self.mins else min(self.mins[f.name], lo)
            self.maxs[f.name] = hi if f.name not in self.maxs else max(self.maxs[f.name], hi)

    def to_json(self) -> str:
        nulls = {k: v for k, v in self.nulls.items() if not pa.types.is_nested(self.schema.field(k).type)}
        return json.dumps({
            "numRecords": self.rows,
            "minValues": {k: _stat_value(v) for k, v in self.mins.items()},
            "maxValues": {k: _stat_value(v) for k, v in self.maxs.items()},
            "nullCount": nulls,
        }, separators=(",", ":"), ensure_ascii=False)


# --- compaction -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TableFile:
    """A live data file of a table, as compaction sees it."""
    path: str
    size: int
    partition: tuple = ()


def plan_compaction(files: list[TableFile], target_size: int, min_input_files: int = 2) -> list[list[TableFile]]:
    """Groups of small files to rewrite as one file each. Only files of one partition are combined; a
    file of at least 3/4 of the target is left alone; groups fill up to the target size, smallest files
    first, and a group of fewer than `min_input_files` files is not worth a rewrite."""
    if target_size <= 0:
        raise SinkError("the target file size must be positive")
    small = [f for f in files if f.size < target_size * 3 // 4]
    by_partition: dict[tuple, list[TableFile]] = {}
    for f in small:
        by_partition.setdefault(f.partition, []).append(f)
    groups = []
    for partition in sorted(by_partition, key=repr):
        current, size = [], 0
        for f in sorted(by_partition[partition], key=lambda f: (f.size, f.path)):
            if current and size + f.size > target_size:
                groups.append(current)
                current, size = [], 0
            current.append(f)
            size += f.size
        groups.append(current)
    return [g for g in groups if len(g) >= min_input_files]


@dataclass(frozen=True)
class FileSizes:
    count: int
    median_bytes: float
    total_bytes: int

    @classmethod
    def of(cls, sizes: list[int]) -> "FileSizes":
        return cls(len(sizes), float(statistics.median(sizes)) if sizes else 0.0, sum(sizes))

    def describe(self) -> str:
        return f"{self.count} files, median {human_bytes(self.median_bytes)}, total {human_bytes(self.total_bytes)}"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
