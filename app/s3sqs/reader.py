"""Executor side: read a partition's files with pyarrow and yield batches in the declared schema.

Everything needed here travels inside the partition (the reader object in a task is a copy frozen
at query start), so this module depends only on pyarrow and its arguments.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.fs as pafs
import pyarrow.json as pajson
import pyarrow.parquet as pq

from .files import S3File

log = logging.getLogger("s3sqs.reader")

# Columns the source fills itself when the declared schema has them.
META_PATH, META_SIZE, META_EVENT_TIME = "_file_path", "_file_size", "_file_event_time"
META_COLUMNS = (META_PATH, META_SIZE, META_EVENT_TIME)
TARGET_BATCH_ROWS = 1 << 17
READ_THREADS = 8


class FileReadError(RuntimeError):
    """A file could not be read or does not fit the schema; the message names the file."""


@dataclass(frozen=True)
class ReadSpec:
    file_format: str
    reader_options: dict = field(default_factory=dict)
    endpoint_url: str | None = None
    region: str | None = None
    partition_columns: tuple[str, ...] = ()
    base_path: str | None = None
    quarantine_location: str | None = None


def s3_filesystem(endpoint_url: str | None, region: str | None) -> pafs.S3FileSystem:
    kwargs = {"region": region} if region else {}
    if endpoint_url:
        p = urlparse(endpoint_url)
        kwargs.update(endpoint_override=p.netloc, scheme=p.scheme)
    return pafs.S3FileSystem(**kwargs)


class _Filesystems:
    """The pyarrow filesystem for each scheme a file may have, made when first needed."""

    def __init__(self, spec: ReadSpec):
        self.spec = spec
        self._s3: pafs.S3FileSystem | None = None

    def of(self, f: S3File) -> pafs.FileSystem:
        if f.scheme == "file":
            return pafs.LocalFileSystem()
        if self._s3 is None:
            self._s3 = s3_filesystem(self.spec.endpoint_url, self.spec.region)
        return self._s3


def read_partition(files: list[S3File], spec: ReadSpec, schema: pa.Schema):
    """Yield RecordBatches of `schema` for every file, few and large.

    Small files are latency-bound (one GET each), so a task reads several at once; pyarrow releases
    the GIL while it fetches and parses.
    """
    fs = _Filesystems(spec)

    def load(f: S3File):
        try:
            return f, conform(_read_file(fs, f, spec, schema), schema, f, spec), None
        except Exception as e:  # every failure names the file; nothing is dropped silently
            return f, None, e

    tables = []
    rows = 0
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, max(1, len(files)))) as pool:
        for f, table, error in pool.map(load, files):
            if error is not None:
                err = FileReadError(f"s3-sqs could not read {f.uri}: {type(error).__name__}: {error}")
                if spec.quarantine_location is None:
                    raise err from error
                quarantine(fs, f, err, spec.quarantine_location)
                continue
            tables.append(table)
            rows += table.num_rows
            if rows >= TARGET_BATCH_ROWS:
                yield from _batches(tables, schema)
                tables, rows = [], 0
    if tables:
        yield from _batches(tables, schema)


def _batches(tables, schema):
    combined = pa.concat_tables(tables).combine_chunks()
    for b in combined.to_batches(max_chunksize=TARGET_BATCH_ROWS):
        yield b.cast(schema) if b.schema != schema else b


def data_fields(schema: pa.Schema, spec: ReadSpec) -> list[pa.Field]:
    skip = set(spec.partition_columns) | set(META_COLUMNS)
    return [f for f in schema if f.name not in skip]


def _read_file(filesystems: _Filesystems, f: S3File, spec: ReadSpec, schema: pa.Schema) -> pa.Table:
    fs, path = filesystems.of(f), f.path
    fields = data_fields(schema, spec)
    if spec.file_format == "parquet":
        with fs.open_input_file(path) as fh:
            pf = pq.ParquetFile(fh)
            present = [x.name for x in fields if x.name in pf.schema_arrow.names]
            return pf.read(columns=present)
    with fs.open_input_stream(path, compression="detect") as stream:  # .gz and friends by extension
        if spec.file_format == "json":
            return pajson.read_json(
                stream,
                read_options=pajson.ReadOptions(block_size=16 << 20),
                parse_options=pajson.ParseOptions(explicit_schema=pa.schema(fields),
                                                  unexpected_field_behavior="ignore"),
            )
        return _read_csv(stream, fields, spec.reader_options)


def _read_csv(stream, fields: list[pa.Field], opts: dict) -> pa.Table:
    header = bool(opts.get("header", False))
    parse = pacsv.ParseOptions(
        delimiter=opts.get("delimiter", ","),
        quote_char=opts.get("quote", '"'),
        escape_char=opts.get("escape", False),
        newlines_in_values=True,
    )
    nulls = [""] + ([opts["nullValue"]] if "nullValue" in opts else [])
    if header:
        read = pacsv.ReadOptions(encoding=opts.get("encoding", "utf8"), block_size=16 << 20)
        convert = pacsv.ConvertOptions(
            column_types={x.name: x.type for x in fields}, include_columns=[x.name for x in fields],
            include_missing_columns=True, null_values=nulls, strings_can_be_null=True)
        return pacsv.read_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
    # Without a header, columns map to the schema by position, as in Spark; extra columns are dropped.
    names = [f"f{i}" for i in range(len(fields))]
    read = pacsv.ReadOptions(encoding=opts.get("encoding", "utf8"), autogenerate_column_names=True,
                             block_size=16 << 20)
    convert = pacsv.ConvertOptions(
        column_types={n: x.type for n, x in zip(names, fields)}, include_columns=names,
        include_missing_columns=True, null_values=nulls, strings_can_be_null=True)
    table = pacsv.read_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
    return table.rename_columns([x.name for x in fields])


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


def quarantine(filesystems: _Filesystems, f: S3File, err: Exception, location: str) -> None:
    """Record a bad file (and a copy of it, when it still exists) instead of failing the batch."""
    name = hashlib.sha1(f.uri.encode()).hexdigest()[:20]
    fs = filesystems.of(f)
    if location.startswith("s3://"):
        qfs, root = filesystems.of(S3File("", "")), location[len("s3://"):]
    else:
        qfs, root = pafs.LocalFileSystem(), location.removeprefix("file://")
    day = time.strftime("%Y-%m-%d", time.gmtime())
    qfs.create_dir(f"{root}/{day}", recursive=True)
    record = {"file": f.uri, "size": f.size, "error": str(err), "quarantined_at": time.time()}
    with qfs.open_output_stream(f"{root}/{day}/{name}.json") as out:
        out.write(json.dumps(record).encode())
    try:
        pafs.copy_files(f.path, f"{root}/{day}/{name}.data",
                        source_filesystem=fs, destination_filesystem=qfs)
    except (OSError, pa.ArrowException) as e:  # typically the file is gone; the record says why
        log.warning("s3-sqs could not copy %s to quarantine: %s", f.uri, e)
    log.error("s3-sqs quarantined %s: %s", f.uri, err)
