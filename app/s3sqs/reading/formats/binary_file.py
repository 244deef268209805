"""binaryFile: one row per file, with its path, modification time, length and raw bytes, as Spark's binaryFile.

The bytes are never decompressed (a .gz file is its compressed bytes). The path is the file's URI as Spark
shows it: s3://bucket/key, or file:/dir/name for a local file (Hadoop's Path form, not percent-encoded).
The modification time is the S3 event's time (or the local mtime when the file has none). A file larger
than `maxFileSize` is refused before its bytes are read.
"""
from __future__ import annotations

import os

import pyarrow as pa

from .base import FileRows, FormatOptions, MalformedFile

RANDOM_ACCESS = True  # the size is checked on the open file, before the content is fetched
COMPRESSION = None    # the content is the file's bytes as stored
SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("modificationTime", pa.timestamp("us", tz="UTC")),
                    pa.field("length", pa.int64()), pa.field("content", pa.binary())])


def read(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    if file is None:
        raise ValueError("binaryFile rows describe the file: read() needs the file (S3File)")
    size = source.size()
    limit = fo.options.max_file_size
    if size > limit:
        raise MalformedFile(f"binaryFile: {file.uri} is {size} bytes, over the maxFileSize limit of {limit} bytes; "
                            "raise the option maxFileSize (e.g. .option('maxFileSize', '2g')) to read it")
    names = {f.name for f in fields}
    row = {"path": pa.array([spark_path(file)], pa.string()),
           "modificationTime": pa.array([_modified_ms(file)], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
           .cast(pa.timestamp("us", tz="UTC")),
           "length": pa.array([size], pa.int64())}
    if "content" in names:  # only fetched when asked for
        row["content"] = pa.array([source.read(size) if size else b""], pa.binary())
    wanted = {k: v for k, v in row.items() if k in names}
    return FileRows(pa.table(wanted or {"length": row["length"]}))  # one row, even with no column of its own


def infer(data, fo: FormatOptions, infer_types: bool = False) -> pa.Schema:
    return SCHEMA


def spark_path(file) -> str:
    """s3://bucket/key for S3; file:/path for a local file, as Hadoop's Path prints it."""
    return f"file:{file.path}" if file.scheme == "file" else file.uri


def _modified_ms(file) -> int | None:
    if file.event_ms is not None:
        return file.event_ms
    if file.scheme == "file":
        return os.stat(file.path).st_mtime_ns // 1_000_000  # Hadoop's local mtime has millisecond precision
    return None  # an S3 file always comes with its event (or listing) time
