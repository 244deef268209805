"""The slow path's parser: walks a JSON record guided by the declared types, as Spark's JacksonParser does.

Python's C scanner parses each value; the walker only steps through the objects and arrays whose declared
type needs it. What Spark does and this copies:
- a STRING column keeps a string's value and any other value's exact source text (`{"k": 1}`, `1.10`);
- a value that does not fit its type is null and makes the row malformed; the row keeps its other fields,
  and a struct keeps its fields that fit (also inside an array), but an array or map with an element that
  does not fit is null as a whole;
- fields the schema does not declare are skipped (and reported: top-level by name, nested as "a.b"); with a
  rescued-data column, a top-level field's whole source text is kept there when something inside it was skipped.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import pyarrow as pa

from ....config.format_options import JsonOptions
from ..common.spark_datetime import date_parser, or_none, timestamp_parser

_scan = json.JSONDecoder(parse_float=Decimal).scan_once
_scanstring = json.decoder.scanstring
_WS = re.compile(r"[ \t\n\r]*")
# A key without escapes or control characters, and the ':' after it: one match instead of a scan and two skips.
_PLAIN_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
_INF = {"NaN": float("nan"), "+INF": float("inf"), "+Infinity": float("inf"), "Infinity": float("inf"),
        "-INF": float("-inf"), "-Infinity": float("-inf")}
_INT_BITS = {8: 7, 16: 15, 32: 31, 64: 63}


class Misfit(Exception):
    """A value that does not fit its declared type. `partial`: what a struct kept (None: the value is null)."""

    def __init__(self, end: int, reason: str, partial=None):
        super().__init__(reason)
        self.end, self.reason, self.partial = end, reason, partial


class Syntax(ValueError):
    """The record is not JSON."""


def ws(s: str, i: int) -> int:
    return _WS.match(s, i).end()


def scan(s: str, i: int):
    try:
        return _scan(s, i)
    except StopIteration:
        raise Syntax(f"not JSON at character {i}") from None


class Context:
    """What one read collects besides the values: nested field paths the schema lacks."""

    def __init__(self, options: JsonOptions):
        self.options = options
        self.unknown: dict[str, None] = {}
        self.skipped = 0  # nested fields skipped so far: tells the top level which of its values lost some


def reader_of(typ: pa.DataType, ctx: Context, path: str):
    """A function (text, index) -> (value for pyarrow, end index) for values of `typ`."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _read_string
    if is_variant(typ):
        return _read_variant
    if pa.types.is_struct(typ):
        return struct_reader({typ.field(k).name: reader_of(typ.field(k).type, ctx, f"{path}{typ.field(k).name}.")
                              for k in range(typ.num_fields)}, ctx, path)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _container(reader_of(typ.value_type, ctx, path), "[", "]", path, typ)
    if pa.types.is_map(typ):
        return _container(reader_of(typ.item_type, ctx, path), "{", "}", path, typ)
    convert = _converter(typ, ctx.options)
    name = str(typ)

    def read_scalar(s, i):
        v, end = scan(s, i)
        if v is None:
            return None, end
        out = convert(v)
        if out is _NO:
            raise Misfit(end, f"{s[i:end][:100]} is not {name}")
        return out, end
    return read_scalar


def is_variant(typ: pa.DataType) -> bool:
    """Spark's Arrow form of VARIANT: struct<value, metadata> whose metadata field is marked variant."""
    return (pa.types.is_struct(typ) and typ.num_fields == 2 and typ.field(1).name == "metadata"
            and (typ.field(1).metadata or {}).get(b"variant") == b"true")


def _read_variant(s, i):
    """Any JSON value, encoded as Spark's VARIANT (with PySpark's own encoder: the worker has it loaded)."""
    from pyspark.sql.types import VariantVal
    _, end = scan(s, i)  # a JSON null is a VARIANT null, not a missing value, as in Spark
    encoded = VariantVal.parseJson(s[i:end])
    return {"value": bytes(encoded.value), "metadata": bytes(encoded.metadata)}, end


def _read_string(s, i):
    if s[i] == '"':
        return _scanstring(s, i + 1)
    v, end = scan(s, i)
    return (None if v is None else s[i:end]), end


def struct_reader(fields: dict, ctx: Context, path: str, extras: list | None = None):
    """Objects into a struct. `extras` (top level only) receives (key, value) of undeclared fields."""
    def read_struct(s, i):
        if s[i] != "{":
            v, end = scan(s, i)
            if v is None:
                return None, end
            raise Misfit(end, f"{s[i:end][:100]} is not an object")
        out, bad = {}, None
        i = ws(s, i + 1)
        if s[i] == "}":
            return out, i + 1
        while True:
            key, i = _key(s, i, "a field name")
            r = fields.get(key)
            if r is None:
                v, i = scan(s, i)
                if extras is not None:
                    extras.append((key, v))
                else:
                    ctx.skipped += 1
                    if path + key not in ctx.unknown:
                        ctx.unknown[path + key] = None
            else:
                start, skipped = i, ctx.skipped
                try:
                    out[key], i = r(s, i)
                    if extras is not None and ctx.skipped != skipped:
                        extras.append((key, Raw(s[start:i])))  # the whole value: what was skipped is in it
                except Misfit as m:
                    out.setdefault(key, m.partial)  # an earlier duplicate that fitted stays, as in Spark
                    if extras is not None:
                        extras.append((key, Raw(s[i:m.end])))
                    i, bad = m.end, bad or f"{path}{key}: {m.reason}"
            i = ws(s, i)
            c = s[i]
            if c == ",":
                i = ws(s, i + 1)
            elif c == "}":
                i += 1
                break
            else:
                raise Syntax(f"expected ',' or '}}' at character {i}")
        if bad is not None:
            raise Misfit(i, bad, out)
        return out, i
    return read_struct


def _key(s: str, i: int, what: str) -> tuple[str, int]:
    """An object's key at `i`, and where its value starts (past the ':')."""
    m = _PLAIN_KEY.match(s, i)
    if m is not None:
        return m.group(1), m.end()
    if s[i] != '"':
        raise Syntax(f"expected {what} at character {i}")
    key, i = _scanstring(s, i + 1)
    i = ws(s, i)
    if s[i] != ":":
        raise Syntax(f"expected ':' at character {i}")
    return key, ws(s, i + 1)


class Raw(str):
    """The source text of a value that did not fit (for the rescued-data column)."""


def _container(item, open_: str, close: str, path: str, typ):
    """Arrays (and maps, by key): an item that does not fit nulls the whole container, unless it is a struct,
    which keeps its partial value."""
    is_map = open_ == "{"

    def read_container(s, i):
        if s[i] != open_:
            v, end = scan(s, i)
            if v is None:
                return None, end
            raise Misfit(end, f"{s[i:end][:100]} is not {typ}")
        out, bad, dead = [], None, False
        i = ws(s, i + 1)
        if s[i] == close:
            return out, i + 1
        while True:
            key = None
            if is_map:
                key, i = _key(s, i, "a key")
            try:
                v, i = item(s, i)
            except Misfit as m:
                v, i, bad = m.partial, m.end, bad or m
                dead = dead or m.partial is None
            out.append((key, v) if is_map else v)
            i = ws(s, i)
            if s[i] == ",":
                i = ws(s, i + 1)
            elif s[i] == close:
                i += 1
                break
            else:
                raise Syntax(f"expected ',' or '{close}' at character {i}")
        if bad is not None:
            raise Misfit(i, bad.reason, None if dead else out)
        return out, i
    return read_container


_NO = object()


def _converter(typ: pa.DataType, opts: JsonOptions):
    """A JSON value (str, int, Decimal, float for NaN/Infinity, bool, dict, list) -> the value for pyarrow,
    or _NO when Spark would not take it."""
    if pa.types.is_boolean(typ):
        return lambda v: v if isinstance(v, bool) else _NO
    if pa.types.is_integer(typ):
        bits = _INT_BITS[typ.bit_width]
        lo, hi = -(1 << bits), (1 << bits) - 1
        return lambda v: v if type(v) is int and lo <= v <= hi else _NO
    if pa.types.is_floating(typ):
        return _to_float
    if pa.types.is_decimal(typ):
        return _decimal_converter(typ.precision, typ.scale)
    if pa.types.is_timestamp(typ):
        parse = or_none(timestamp_parser(opts.timestamp_format, ntz=typ.tz is None))
        return lambda v: (_or_no(parse(v)) if isinstance(v, str) and v else
                          v * 1_000_000 if type(v) is int and typ.tz is not None else _NO)
    if pa.types.is_date(typ):
        parse = or_none(date_parser(opts.date_format))
        return lambda v: _or_no(parse(v)) if isinstance(v, str) and v else _NO
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return _to_binary
    if pa.types.is_null(typ):
        return lambda v: _NO
    raise ValueError(f"the JSON reader cannot read the declared type {typ}")


def _or_no(v):
    return _NO if v is None else v


def _to_float(v):
    if type(v) in (int, float) or isinstance(v, Decimal):
        return float(v)
    if isinstance(v, str):
        return _INF.get(v, _NO)
    return _NO


def _decimal_converter(precision: int, scale: int):
    quantum, limit = Decimal(1).scaleb(-scale), Decimal(10) ** (precision - scale)

    def convert(v):
        if isinstance(v, str):
            try:
                v = Decimal(v.strip())
            except InvalidOperation:
                return _NO
        elif type(v) is int:
            v = Decimal(v)
        elif not isinstance(v, Decimal):
            return _NO
        if not v.is_finite():
            return _NO
        try:
            q = v.quantize(quantum, rounding=ROUND_HALF_UP)
        except InvalidOperation:
            return _NO
        return q if abs(q) < limit else _NO
    return convert


def _to_binary(v):
    if not isinstance(v, str):
        return _NO
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return _NO
