"""The tolerant path of the text formats: when pyarrow's typed reader meets a row it cannot take, the file's
values (as text or JSON values, from the format's module) are cast one column at a time and the values
that do not fit are set aside. Good files never come here; a bad row costs only its own file a slower parse.

Modes, as Spark users know them (CSV and JSON lines):
- PERMISSIVE: a malformed row keeps what parses; what does not is null, and the raw text goes to the
  rescued-data column when the schema declares one;
- DROPMALFORMED: malformed rows are dropped;
- FAILFAST: the first malformed row makes the whole file bad.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from ...core.vocabulary import Mode
from .base import FileRows, FormatOptions, MalformedFile

BLOCK_BYTES = 16 << 20
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                OverflowError)


def tolerant(values: tuple[dict[str, list], list], fields: list[pa.Field], fo: FormatOptions) -> FileRows:
    """`values`: each column's values, and per row the raw text of a row that could not be split into the
    declared columns (None for a row that could)."""
    columns, raw = values
    n = len(raw)
    bad = [False] * n
    rescued: list[dict] = [{} for _ in range(n)]
    for i, r in enumerate(raw):
        if r is not None:
            bad[i] = True
            rescued[i]["_row"] = r
    arrays = []
    for f in fields:
        arr, misfits = _cast_tolerant(columns[f.name], f.type)
        for i in misfits:
            bad[i] = True
            rescued[i][f.name] = columns[f.name][i]
        arrays.append(arr)
    malformed = sum(bad)
    if malformed and fo.mode == Mode.FAILFAST:
        first = bad.index(True)
        raise MalformedFile(f"malformed row {first + 1} (mode FAILFAST): {json.dumps(rescued[first])[:300]}")
    table = pa.Table.from_arrays(arrays, names=[f.name for f in fields])
    if fo.rescued_column:
        table = table.append_column(fo.rescued_column, pa.array(
            [json.dumps(r, default=str) if r else None for r in rescued], pa.string()))
    if fo.mode == Mode.DROPMALFORMED and malformed:
        return FileRows(table.filter(pa.array([not b for b in bad])), malformed, malformed)
    return FileRows(table, malformed)


def _cast_tolerant(values: list, typ: pa.DataType) -> tuple[pa.Array, list[int]]:
    """The values as `typ`, with those that do not fit as nulls; returns their positions too."""
    try:
        return _as_type(values, typ), []
    except _CAST_ERRORS:
        pass
    out, misfits = [], []
    for i, v in enumerate(values):
        try:
            out.append(_as_type([v], typ)[0].as_py())
        except _CAST_ERRORS:
            out.append(None)
            misfits.append(i)
    return pa.array(out, typ), misfits


def _as_type(values: list, typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in values], typ)
    if all(v is None or isinstance(v, str) for v in values):
        return pc.cast(pa.array(values, pa.string()), typ)  # text (CSV, or JSON strings): parse it
    if pa.types.is_integer(typ) and any(isinstance(v, float) or isinstance(v, bool) for v in values):
        raise TypeError("not an integer")
    return pa.array(values, typ)
