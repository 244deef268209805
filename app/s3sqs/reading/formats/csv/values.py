"""Text values into the declared types exactly as Spark's CSV reader converts them.

`exact_cast` converts a whole column with Arrow's kernels where their result is Spark's for every value
they accept, and gives None where a value needs Spark's own rules (the caller then converts value by
value with `converter`). What Spark does that Arrow does not: integers take a leading '+', doubles are
trimmed and take Java's forms (1.5d, 0x1p3, Infinity; NaN, Inf and -Inf exactly), booleans are true/false
in any case and nothing else, decimals drop ',' and round half up, dates and timestamps follow
spark_datetime.
"""
from __future__ import annotations

import decimal
import math
import re
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....config.format_options import ISO_DATE, ISO_TIMESTAMP, CsvOptions
from ..common.spark_datetime import date_parser, timestamp_parser

_TRIM = "".join(map(chr, range(33)))
JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")
BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT_RANGE = {8: 1 << 7, 16: 1 << 15, 32: 1 << 31, 64: 1 << 63}


def is_plain(typ: pa.DataType) -> bool:
    """A type CSV can hold (Spark refuses nested types for CSV)."""
    return not (pa.types.is_nested(typ) or pa.types.is_dictionary(typ))


def java_double(s: str) -> float:
    if s == "NaN":
        return math.nan
    if s == "Inf":
        return math.inf
    if s == "-Inf":
        return -math.inf
    t = s.strip(_TRIM)
    if _JAVA_DOUBLE.fullmatch(t):
        if t.lstrip("+-") in ("NaN", "Infinity"):
            return math.nan if "NaN" in t else (-math.inf if t[0] == "-" else math.inf)
        return float(t.rstrip("fFdD"))
    h = _JAVA_HEX.fullmatch(t)
    if h:
        v = float.fromhex(h.group(2))
        return -v if h.group(1) == "-" else v
    raise ValueError(f"not a double: {s!r}")


def _java_int(bits: int) -> Callable[[str], int]:
    limit = _INT_RANGE[bits]

    def parse(s: str) -> int:
        if not JAVA_INT.fullmatch(s):
            raise ValueError(f"not an integer: {s!r}")
        v = int(s)
        if not -limit <= v < limit:
            raise ValueError(f"{s!r} out of range")
        return v
    return parse


def _boolean(s: str) -> bool:
    low = s.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    raise ValueError(f"not a boolean: {s!r}")


def _decimal(typ: pa.Decimal128Type) -> Callable[[str], decimal.Decimal]:
    quantum = decimal.Decimal(1).scaleb(-typ.scale)
    ctx = decimal.Context(prec=200)

    def parse(s: str) -> decimal.Decimal:
        t = s.replace(",", "")
        if not BIG_DECIMAL.fullmatch(t):
            raise ValueError(f"not a decimal: {s!r}")
        v = decimal.Decimal(t).quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=ctx)
        if len(v.as_tuple().digits) > typ.precision and v != 0:
            raise ValueError(f"{s!r} does not fit {typ}")
        return v
    return parse


def converter(typ: pa.DataType, opts: CsvOptions) -> Callable[[str], object]:
    """Spark's conversion of one non-null text value to `typ`; raises ValueError when it does not fit."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return str
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return lambda s: s.encode("utf-8", "surrogatepass")
    if pa.types.is_integer(typ):
        return _java_int(typ.bit_width)
    if pa.types.is_floating(typ):
        return java_double
    if pa.types.is_boolean(typ):
        return _boolean
    if pa.types.is_decimal(typ):
        return _decimal(typ)
    if pa.types.is_date(typ):
        return date_parser(opts.date_format)
    if pa.types.is_timestamp(typ):
        return timestamp_parser(opts.timestamp_format, ntz=typ.tz is None)
    raise TypeError(f"CSV cannot read a column of type {typ}")


def exact_cast(arr: pa.Array, typ: pa.DataType, opts: CsvOptions) -> pa.Array | None:
    """The string column `arr` as `typ` by Arrow's kernels, or None where they could differ from Spark."""
    try:
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return arr.cast(typ)
        if pa.types.is_integer(typ) and _may_hold(arr, b"xX") \
                and pc.any(pc.match_substring(arr, "x", ignore_case=True)).as_py():
            return None  # Arrow reads hexadecimal ("0x10"); Spark's integers are decimal only
        if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_integer(typ):
            return pc.cast(arr, typ)
        if pa.types.is_decimal(typ):
            return pc.cast(arr, typ)
        if pa.types.is_floating(typ):
            out = pc.cast(arr, typ)
            return out if pc.all(pc.is_finite(out)).as_py() in (True, None) else None
        if pa.types.is_boolean(typ):
            low = pc.utf8_lower(arr)
            yes, no = pc.equal(low, "true"), pc.equal(low, "false")
            return yes if pc.all(pc.or_(yes, no)).as_py() in (True, None) else None
        if pa.types.is_date(typ):
            return pc.cast(arr, typ) if opts.date_format == ISO_DATE else None
        if pa.types.is_timestamp(typ):
            return _timestamp(arr, typ) if opts.timestamp_format == ISO_TIMESTAMP or typ.tz is None else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return None


def _may_hold(arr: pa.Array | pa.ChunkedArray, chars: bytes) -> bool:
    """Whether a value of the string column may hold one of `chars`: its data buffers are scanned, ~30×
    faster than a kernel over the values. A buffer can hold bytes of values sliced away, so True is a maybe."""
    for chunk in arr.chunks if isinstance(arr, pa.ChunkedArray) else (arr,):
        data = chunk.buffers()[2]
        if data is not None and data.size:
            b = np.frombuffer(data, np.uint8)
            if any((b == c).any() for c in chars):
                return True
    return False


_ZONED = r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:?\d\d)$"


def _timestamp(arr: pa.Array, typ: pa.TimestampType) -> pa.Array | None:
    """Zone-less ISO text in a UTC session, or text that has a zone on every value (TIMESTAMP only)."""
    naive = pa.timestamp(typ.unit)
    try:
        out = pc.cast(arr, naive)
    except pa.ArrowInvalid:
        if typ.tz is None:
            raise
        # Arrow takes a zone after hours or minutes alone ("2020-01-15T10:20Z"); Spark wants the seconds.
        if not pc.all(pc.match_substring_regex(arr, _ZONED)).as_py() in (True, None):
            return None
        return pc.cast(arr, typ)
    if pc.any(pc.match_substring_regex(arr, r"^\d\d:")).as_py():  # a time without a date: Spark puts today
        return None
    return out.cast(typ) if typ.tz is None else pc.assume_timezone(out, "UTC").cast(typ)
