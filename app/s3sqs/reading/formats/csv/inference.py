"""A CSV file's own schema, as Spark's CSV inference gives it (spark.read.csv(..., inferSchema=...)).

Names: the header's (an empty one, or nullValue, becomes `_c<i>`; names that repeat, ignoring case, get
their position appended), or `_c0, _c1, ...` by the first record's width. Types, when asked: each value
moves its column along Spark's ladder int -> long -> decimal (whole numbers past long) -> double ->
date (dateFormat, strictly) -> timestamp (as CAST reads it, or timestampFormat) -> boolean -> string, and
columns widen as Spark widens them; a column with no values is STRING.
"""
from __future__ import annotations

import decimal

import pyarrow as pa

from ....config.format_options import CsvOptions
from ..base import FormatOptions, decode
from ..common.spark_datetime import date_parser, timestamp_parser
from .rows import datum
from .tokens import Dialect, records
from .values import BIG_DECIMAL, JAVA_INT, java_double

_I32, _I64 = pa.int32(), pa.int64()
_F64, _BOOL, _DATE, _STR = pa.float64(), pa.bool_(), pa.date32(), pa.string()
_TS = pa.timestamp("us", tz="UTC")
_NUMERIC_ORDER = {_I32: 0, _I64: 1}


def infer(data, fo: FormatOptions, infer_types: bool) -> pa.Schema:
    opts = fo.options
    recs = records(decode(data, opts.encoding), Dialect.of(opts))
    first = next(recs, None)
    if first is None:
        return pa.schema([])
    nv, ev = opts.null_value, opts.empty_value
    if opts.header:
        names = _safe_names([datum(t, nv, ev) for t in first])
        rows = recs
    else:
        names = [f"_c{i}" for i in range(len(first))]
        rows = _chain(first, recs)
    if not infer_types:
        return pa.schema([pa.field(n, _STR) for n in names])
    types: list = [None] * len(names)
    ladder = _Ladder(opts)
    for tokens in rows:
        for i in range(min(len(names), len(tokens))):
            v = datum(tokens[i], nv, ev)
            if v:
                types[i] = ladder.widen(types[i], v)
    return pa.schema([pa.field(n, t if t is not None else _STR) for n, t in zip(names, types)])


def _chain(first, rest):
    yield first
    yield from rest


def _safe_names(header: list) -> list[str]:
    lowered = [h.lower() for h in header if h]
    dupes = {h for h in lowered if lowered.count(h) > 1}
    return [f"_c{i}" if not h else (f"{h}{i}" if h.lower() in dupes else h) for i, h in enumerate(header)]


class _Ladder:
    def __init__(self, opts: CsvOptions):
        self.date = date_parser(opts.date_format, fallback=False)  # inference: strictly, even by the default
        self.timestamp = timestamp_parser(opts.timestamp_format)

    def widen(self, so_far, v: str):
        return _compatible(so_far, self.value_type(so_far, v))

    def value_type(self, so_far, v: str):
        start = {None: 0, _I32: 0, _I64: 1, _F64: 3, _DATE: 4, _TS: 5, _BOOL: 6, _STR: 7}.get(
            so_far, 2 if so_far is not None and pa.types.is_decimal(so_far) else 0)
        steps = [self._int, self._long, self._decimal, self._double, self._date, self._timestamp, self._bool]
        for step in steps[start:]:
            t = step(v)
            if t is not None:
                return t
        return _STR

    def _int(self, v):
        return _I32 if JAVA_INT.fullmatch(v) and -(1 << 31) <= int(v) < (1 << 31) else None

    def _long(self, v):
        return _I64 if JAVA_INT.fullmatch(v) and -(1 << 63) <= int(v) < (1 << 63) else None

    def _decimal(self, v):
        t = v.replace(",", "")
        if not BIG_DECIMAL.fullmatch(t):
            return None
        d = decimal.Decimal(t)
        sign, digits, exp = d.as_tuple()
        if exp != 0:  # Spark: a whole number (a positive exponent gives a negative scale, which it refuses)
            return None
        return pa.decimal128(len(digits), 0) if len(digits) <= 38 else None

    def _double(self, v):
        try:
            java_double(v)
            return _F64
        except ValueError:
            return None

    def _date(self, v):
        try:
            self.date(v)
            return _DATE
        except (ValueError, KeyError, StopIteration):
            return None

    def _timestamp(self, v):
        try:
            self.timestamp(v)
            return _TS
        except (ValueError, KeyError, StopIteration, OverflowError):
            return None

    def _bool(self, v):
        return _BOOL if v.lower() in ("true", "false") else None


def _compatible(a, b):
    if a is None or a == b:
        return b
    if {a, b} <= {_I32, _I64}:
        return _I64
    num = (_I32, _I64, _F64)
    if a in num and b in num:
        return _F64
    dec_a, dec_b = pa.types.is_decimal(a), pa.types.is_decimal(b)
    if dec_a or dec_b:
        if (dec_a and b == _F64) or (dec_b and a == _F64):
            return _F64
        da = a if dec_a else _as_decimal(a)
        db = b if dec_b else _as_decimal(b)
        if da is None or db is None:
            return _STR
        scale = max(da.scale, db.scale)
        return pa.decimal128(min(38, max(da.precision - da.scale, db.precision - db.scale) + scale), scale)
    if {a, b} == {_DATE, _TS}:
        return _TS
    return _STR


def _as_decimal(t):
    return {_I32: pa.decimal128(10, 0), _I64: pa.decimal128(20, 0)}.get(t)


