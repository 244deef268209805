"""A file's rows in exactly the declared schema: columns selected and cast by name, missing ones null, and
the columns the source fills itself (partition values from the path, the file's metadata)."""
from __future__ import annotations

from urllib.parse import unquote, urlparse

import pyarrow as pa

from ..core.files import NULL_PARTITION, S3File

# Columns the source fills itself when the declared schema has them: `_metadata`, a struct with Spark's
# file-metadata fields and what only this source knows, and the flat `_file_*` columns of earlier versions.
METADATA = "_metadata"
META_PATH, META_SIZE, META_EVENT_TIME = "_file_path", "_file_size", "_file_event_time"
META_COLUMNS = (META_PATH, META_SIZE, META_EVENT_TIME, METADATA)


def _ts(ms: int | None):
    return None if ms is None else ms * 1000  # microseconds, for an Arrow timestamp("us")


# Field of `_metadata` -> (Arrow type, value for a file and the (start, length) of the range read of it).
# Spark's own six first; its block is the byte range a task was given (the whole file unless it was split).
METADATA_FIELDS = {
    "file_path": (pa.string(), lambda f, b: f.uri),
    "file_name": (pa.string(), lambda f, b: f.name),
    "file_size": (pa.int64(), lambda f, b: f.size),
    "file_block_start": (pa.int64(), lambda f, b: b[0]),
    "file_block_length": (pa.int64(), lambda f, b: b[1]),
    "file_modification_time": (pa.timestamp("us", tz="UTC"), lambda f, b: _ts(f.event_ms)),
    "event_time": (pa.timestamp("us", tz="UTC"), lambda f, b: _ts(f.event_ms)),
    "etag": (pa.string(), lambda f, b: f.etag),
    "version_id": (pa.string(), lambda f, b: f.version_id),
    "seq": (pa.int64(), lambda f, b: f.seq),
}


def metadata_column(typ: pa.DataType, f: S3File, n: int, block: tuple[int, int | None] | None = None) -> pa.Array:
    """`_metadata` as declared: the struct's fields, by name, each the file's value on every row."""
    if not pa.types.is_struct(typ):
        raise ValueError(f"column {METADATA!r} must be a STRUCT of some of: {', '.join(METADATA_FIELDS)}")
    block = (0, f.size) if block is None else block
    children = []
    for i in range(typ.num_fields):
        field = typ.field(i)
        if field.name not in METADATA_FIELDS:
            raise ValueError(f"_metadata has no field {field.name!r}; its fields: {', '.join(METADATA_FIELDS)}")
        arrow_type, value = METADATA_FIELDS[field.name]
        children.append(pa.array([value(f, block)] * n, arrow_type).cast(field.type))
    return pa.StructArray.from_arrays(children, fields=list(typ))


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
            out[k] = None if v == NULL_PARTITION else v
    return out


def conform(table: pa.Table, schema: pa.Schema, f: S3File, partition_columns: tuple[str, ...],
            base_path: str | None, block: tuple[int, int | None] | None = None) -> pa.Table:
    """Select, fill and cast columns by name to exactly `schema`; `block` is the (start, length) of the
    range of the file these rows come from (None: the whole file)."""
    n = table.num_rows
    parts = partition_values(f.key, base_path) if partition_columns else {}
    arrays = []
    for fld in schema:
        if fld.name in partition_columns:
            if fld.name not in parts:
                raise ValueError(f"partition column {fld.name!r} has no '{fld.name}=value' segment in the key")
            arr = pa.array([parts[fld.name]] * n, pa.string()).cast(fld.type)
        elif fld.name == META_PATH:
            arr = pa.array([f.uri] * n, pa.string()).cast(fld.type)
        elif fld.name == META_SIZE:
            arr = pa.array([f.size] * n, pa.int64()).cast(fld.type)
        elif fld.name == METADATA:
            arr = metadata_column(fld.type, f, n, block)
        elif fld.name == META_EVENT_TIME:
            arr = pa.array([f.event_ms] * n, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(fld.type)
        elif fld.name in table.column_names:
            arr = table.column(fld.name)
            if arr.type != fld.type:
                arr = arr.cast(fld.type)
        else:
            arr = pa.nulls(n, fld.type)
        if not fld.nullable and arr.null_count:
            raise ValueError(f"column {fld.name!r} is declared NOT NULL but has {arr.null_count} null values")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)
