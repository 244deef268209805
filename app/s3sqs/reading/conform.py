"""A file's rows in exactly the declared schema: columns selected and cast by name, missing ones null, and
the columns the source fills itself (partition values from the path, the file's metadata)."""
from __future__ import annotations

from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from ..core.files import NULL_PARTITION, S3File

# Columns the source fills itself when the declared schema has them.
META_PATH, META_SIZE, META_EVENT_TIME = "_file_path", "_file_size", "_file_event_time"
META_COLUMNS = (META_PATH, META_SIZE, META_EVENT_TIME)


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
            base_path: str | None) -> pa.Table:
    """Select, fill and cast columns by name to exactly `schema`."""
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
