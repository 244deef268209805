"""A JSON file's own schema, inferred as Spark's JSON reader infers it (JsonInferSchema).

Fields sorted by name; integers LONG (DECIMAL(p, 0) beyond a long, DOUBLE beyond 38 digits); other numbers
DOUBLE (DECIMAL with prefersDecimal when it fits); strings STRING (Spark infers timestamps only with
inferTimestamp, off by default); conflicting types widen (LONG+DOUBLE -> DOUBLE, structs merge) or become
STRING; a field only ever null, or an empty array's element, is STRING; an empty struct is left out. Without
inferColumnTypes (or with primitivesAsString) every leaf is STRING, structs and arrays stay.
"""
from __future__ import annotations

from decimal import Decimal

import pyarrow as pa

from ....config.format_options import JsonOptions
from .rows import records
from .walk import Syntax, scan, ws

_NULL = pa.null()
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def infer_schema(text: str, opts: JsonOptions, infer_types: bool) -> pa.Schema:
    as_string = opts.primitives_as_string or not infer_types
    decimals = opts.prefers_decimal
    merged = pa.struct([])
    for rec in records(text, opts):
        i = ws(rec, 0)
        if i == len(rec):
            continue
        try:
            value = scan(rec, i)[0]
        except (Syntax, ValueError, RecursionError):
            continue  # Spark adds its corrupt-record column; this source has the rescued column instead
        for obj in (value if isinstance(value, list) else [value]):
            if isinstance(obj, dict):
                merged = _merge(merged, _type_of(obj, as_string, decimals))
    final = _canonical(merged)
    return pa.schema(list(final) if final is not None else [])


def _type_of(v, as_string: bool, decimals: bool) -> pa.DataType:
    if v is None:
        return _NULL
    if isinstance(v, dict):
        return pa.struct(sorted((pa.field(k, _type_of(x, as_string, decimals)) for k, x in v.items()),
                                key=lambda f: f.name))
    if isinstance(v, list):
        t = _NULL
        for x in v:
            t = _merge(t, _type_of(x, as_string, decimals))
        return pa.list_(t)
    if isinstance(v, str) or as_string:
        return pa.string()
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        if _LONG_MIN <= v <= _LONG_MAX:
            return pa.int64()
        digits = len(str(abs(v)))
        return pa.decimal128(digits, 0) if digits <= 38 else pa.float64()
    if isinstance(v, Decimal) and decimals and v.is_finite():
        sign, digits, exp = v.as_tuple()
        scale = max(-exp, 0)
        precision = max(len(digits) + max(exp, 0), scale)
        if precision <= 38:
            return pa.decimal128(precision, scale)
    return pa.float64()


def _merge(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Spark's compatibleType."""
    if a == b or b == _NULL:
        return a
    if a == _NULL:
        return b
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {a.field(i).name: a.field(i).type for i in range(a.num_fields)}
        for i in range(b.num_fields):
            f = b.field(i)
            fields[f.name] = _merge(fields[f.name], f.type) if f.name in fields else f.type
        return pa.struct([pa.field(k, fields[k]) for k in sorted(fields)])
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(_merge(a.value_type, b.value_type))
    numeric = (pa.types.is_int64, pa.types.is_float64, pa.types.is_decimal)
    if any(c(a) for c in numeric) and any(c(b) for c in numeric):
        if pa.types.is_float64(a) or pa.types.is_float64(b):
            return pa.float64()
        return _wider_decimal(_as_decimal(a), _as_decimal(b))
    return pa.string()


def _as_decimal(t: pa.DataType) -> pa.DataType:
    return pa.decimal128(20, 0) if pa.types.is_int64(t) else t


def _wider_decimal(a, b) -> pa.DataType:
    scale = max(a.scale, b.scale)
    whole = max(a.precision - a.scale, b.precision - b.scale)
    return pa.decimal128(whole + scale, scale) if whole + scale <= 38 else pa.float64()


def _canonical(t: pa.DataType):
    """Nulls become STRING, empty structs go away (Spark's canonicalizeType)."""
    if t == _NULL:
        return pa.string()
    if pa.types.is_list(t):
        inner = _canonical(t.value_type)
        return None if inner is None else pa.list_(inner)
    if pa.types.is_struct(t):
        fields = [(t.field(i).name, _canonical(t.field(i).type)) for i in range(t.num_fields)]
        kept = [pa.field(n, x) for n, x in fields if x is not None]
        return pa.struct(kept) if kept else None
    return t
