"""The rescued-data column for the formats that carry their own types (Parquet, ORC, Avro).

Only when the declared schema has that column: a value that does not fit its declared type is null in its
column and kept in the rescued column, and so are the values of top-level fields the schema does not
declare, as a compact JSON object per row with "_file_path". Without it, the declared columns go on as they
are, and conform's cast decides (a value that does not fit makes the file bad, as in Spark).
"""
from __future__ import annotations

import base64
import datetime as dt
import json

import pyarrow as pa
import pyarrow.compute as pc

from ..base import FileRows, FormatOptions
from .typed_schema import as_declared, column_of

_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)


def finish(table: pa.Table, fields: list[pa.Field], fo: FormatOptions, file, unknown: tuple[str, ...]) -> FileRows:
    """`table` holds the file's columns under the file's names (all of them when a rescued column is asked
    for); the declared ones come out under their declared names."""
    holds = column_of(table.column_names, fields)  # declared name -> the file's column
    declared = [f for f in fields if f.name in holds]
    columns = {f.name: as_declared(table.column(holds[f.name]), f.type) for f in declared}
    if not fo.rescued_column:
        return FileRows(pa.table(columns), unknown=unknown)
    rescued: list[dict] = [{} for _ in range(table.num_rows)]
    reason = None
    for f in declared:
        col = columns[f.name]
        columns[f.name], misfits = _fit(col, f.type)
        for i in misfits:
            rescued[i][f.name] = col[i].as_py()
        if misfits and reason is None:
            reason = f"column {f.name}: value {str(col[misfits[0]].as_py())[:80]!r} does not fit {f.type}"
    malformed = sum(1 for r in rescued if r)
    used = set(holds.values())
    for name in table.column_names:
        if name not in used:
            for i, v in enumerate(table.column(name).to_pylist()):
                if v is not None:
                    rescued[i][name] = v
    uri = file.uri if file is not None else None
    columns[fo.rescued_column] = pa.array(
        [json.dumps({**r, "_file_path": uri}, default=_json_value, separators=(",", ":"), ensure_ascii=False)
         if r else None for r in rescued], pa.string())
    return FileRows(pa.table(columns), malformed=malformed, unknown=unknown, reason=reason)


def _fit(col: pa.ChunkedArray, typ: pa.DataType) -> tuple[pa.ChunkedArray | pa.Array, list[int]]:
    """The column as `typ`, values that do not fit set to null; their positions."""
    if col.type == typ:
        return col, []
    try:
        return pc.cast(col, typ), []
    except _CAST_ERRORS:
        pass
    out, misfits = [], []
    for i, v in enumerate(col):
        try:
            out.append(pc.cast(pa.array([v.as_py()], col.type), typ)[0].as_py())
        except _CAST_ERRORS:
            out.append(None)
            misfits.append(i)
    return pa.array(out, typ), misfits


def _json_value(v):
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    return str(v)  # Decimal, UUID
