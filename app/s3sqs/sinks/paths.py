"""Where a table's data files go: partition folders and unique file names, and a batch's rows split by
partition value. Pure, with unit tests."""
from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from ..core.files import NULL_PARTITION


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


# What Spark's file sink escapes in a folder name (ExternalCatalogUtils.escapePathName). Its readers take
# partition values from folder names, and decode each %XX as one character, so anything else (UTF-8
# above all) must stay as it is.
_SPARK_ESCAPED = frozenset(map(chr, range(1, 32))) | frozenset("\"#%'*/:=?\\\x7f{[]^")


def spark_escape_path_segment(text: str) -> str:
    """A partition value in a folder name, as Spark's file sink writes it."""
    return "".join(f"%{ord(c):02X}" if c in _SPARK_ESCAPED else c for c in text)


def partition_path(columns: tuple[str, ...], values: tuple[str | None, ...], escape=escape_path_segment) -> str:
    return "/".join(f"{escape(c)}={NULL_PARTITION if v is None else escape(v)}" for c, v in zip(columns, values))


def data_file_name(batch_id: int, write_id: str, task: int, attempt: int, seq: int) -> str:
    """Unique per batch, write attempt, task attempt (Spark's task attempt id, unique in the application)
    and file: a replayed or retried write never overwrites a file an earlier attempt may have committed."""
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
