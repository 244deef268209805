"""Delta's per-file statistics (numRecords, nullCount, min/max where exact and portable), gathered while
a file is written. Pure, with unit tests."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.compute as pc

# Delta's data skipping trusts min/max exactly; long strings would bloat every log entry.
MAX_STAT_STRING = 64


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
