"""Token records into the declared columns, with Spark's rules for nulls, malformed rows and modes.

A row is malformed, as in Spark, when it has more or fewer values than the schema has columns, or when a
value does not convert to its column's type. PERMISSIVE keeps it (values that do not convert are null),
DROPMALFORMED drops it, FAILFAST fails the file at the first one. Columns map to the schema by position.
"""
from __future__ import annotations

import json
from typing import Iterable

import pyarrow as pa

from ....config.format_options import CsvOptions
from ....core.vocabulary import Mode
from ..base import FileRows, FormatOptions, MalformedFile
from .tokens import QuotedEmpty
from .values import converter, exact_cast


def datum(token, null_value: str, empty_value: str):
    """Spark's value for a token: unquoted empty is null, quoted empty is emptyValue, nullValue is null."""
    if token is None:
        return None
    if isinstance(token, QuotedEmpty):
        token = empty_value
    return None if token == null_value else token


def build(records: Iterable[list], fields: list[pa.Field], fo: FormatOptions, extra_names: list[str],
          file_uri: str | None) -> FileRows:
    """`extra_names`: the header's names by position (values past the schema's columns are rescued under
    them; `_c<i>` where there is no header)."""
    opts = fo.options
    nv, ev = opts.null_value, opts.empty_value
    n = len(fields)
    columns: list[list] = [[] for _ in fields]
    shape: list[int] = []  # per row: how many values it had
    extras: list[dict | None] = []
    for tokens in records:
        k = len(tokens)
        for i in range(n):
            columns[i].append(datum(tokens[i], nv, ev) if i < k else None)
        shape.append(k)
        if k > n and fo.rescued_column:
            extra = {_name(extra_names, j): datum(tokens[j], nv, ev) for j in range(n, k)}
            extras.append({c: v for c, v in extra.items() if v is not None} or None)
        else:
            extras.append(None)
    rows = len(shape)
    bad = [k != n for k in shape]
    misfit_values: dict[int, dict] = {}
    reasons: dict[int, str] = {i: f"{k} values where the schema has {n} columns" for i, k in enumerate(shape)
                               if k != n}
    arrays = []
    for i, f in enumerate(fields):
        arr, misfits = convert_column(columns[i], f.type, opts)
        for r in misfits:
            bad[r] = True
            misfit_values.setdefault(r, {})[f.name] = columns[i][r]
            reasons.setdefault(r, f"column {f.name!r} value {columns[i][r]!r} is not {f.type}")
        arrays.append(arr)
    malformed = sum(bad)
    first = bad.index(True) if malformed else None
    reason = f"row {first + 1}: {reasons[first]}"[:300] if malformed else None
    if malformed and fo.mode == Mode.FAILFAST:
        raise MalformedFile(f"CSV: malformed row (mode FAILFAST): {reason}; check the schema and the CSV "
                            "options (sep, quote, escape, header)")
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else pa.table({})
    if fo.rescued_column:
        table = table.append_column(fo.rescued_column, pa.array(
            [_rescued(misfit_values.get(r), extras[r], file_uri) for r in range(rows)], pa.string()))
    if fo.mode == Mode.DROPMALFORMED and malformed:
        return FileRows(table.filter(pa.array([not b for b in bad])), malformed, malformed, reason=reason)
    return FileRows(table, malformed, reason=reason)


def _name(names: list[str], j: int) -> str:
    return names[j] if j < len(names) and names[j] else f"_c{j}"


def _rescued(misfits: dict | None, extra: dict | None, uri: str | None) -> str | None:
    if not misfits and not extra:
        return None
    return json.dumps({**(extra or {}), **(misfits or {}), "_file_path": uri}, default=str)


def convert_column(values: list, typ: pa.DataType, opts: CsvOptions) -> tuple[pa.Array, list[int]]:
    """The column's text values (None: null) as `typ`, with the positions of those that do not fit."""
    text = pa.array(values, pa.string())
    fast = exact_cast(text, typ, opts)
    if fast is not None:
        return fast, []
    conv = converter(typ, opts)
    out, misfits = [], []
    for r, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(conv(v))
        except (ValueError, OverflowError, ArithmeticError, KeyError, StopIteration):
            out.append(None)
            misfits.append(r)
    return pa.array(out, typ), misfits
