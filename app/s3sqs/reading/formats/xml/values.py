"""A text value as a column's type, the way Spark's XML reader casts it (StaxXmlParser.convertTo).

Spark trims the value when ignoreSurroundingSpaces, maps nullValue to null, then parses with the JVM's own
parsers: Long.parseLong after taking off one sign (so `--5` is 5 and the smallest long does not parse),
Double.parseDouble with a fall-back to the locale's NumberFormat (which reads the longest numeric
prefix: `12abc` is 12.0, `1,234.5` is 1234.5), BigDecimal with commas removed, and true/false/1/0 for
booleans. A value that does not parse raises BadValue.
"""
from __future__ import annotations

import re
import unicodedata
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Callable

import pyarrow as pa

from ....config.format_options import XmlOptions
from ..common import spark_datetime


class BadValue(ValueError):
    """A value that does not fit its column's type."""


_LIMITS = {8: 1 << 7, 16: 1 << 15, 32: 1 << 31, 64: 1 << 63}
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)"
    r"|(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?))")
_WIDE = Context(prec=200)  # room for decimal(38, s) and beyond, so that only real overflow fails
_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _java_int(s: str, bits: int) -> int:
    """Long/Integer/Short/Byte.parseXxx: an optional sign and decimal digits, within range."""
    body = s[1:] if s[:1] in "+-" else s
    if not body or not body.isdecimal():
        raise BadValue(f"not a whole number: {s!r}")
    v = int(s)
    if not -_LIMITS[bits] <= v < _LIMITS[bits]:
        raise BadValue(f"out of range for a {bits}-bit integer: {s!r}")
    return v


def _sign_safe(parse: Callable[[str], object]) -> Callable[[str], object]:
    """Spark takes one leading sign off before parsing and negates the result itself."""
    def run(s: str):
        if s.startswith("-"):
            return -parse(s[1:])
        if s.startswith("+"):
            return parse(s[1:])
        return parse(s)
    return run


_JAVA_BLANK = "".join(chr(c) for c in range(33))  # what String.trim (and so parseDouble) cuts


def _java_double(s: str) -> float:
    t = s.strip(_JAVA_BLANK)
    if _JAVA_DOUBLE.fullmatch(t):
        if t[-1] in "fFdD" and not t.endswith("Infinity"):
            t = t[:-1]
        body = t.lstrip("+-")
        if body[:2] in ("0x", "0X"):
            v = float.fromhex(body)
            return -v if t.startswith("-") else v
        return float(t.replace("Infinity", "inf"))
    return _number_format(s)


def _number_format(s: str) -> float:
    """java.text.NumberFormat (en-US): the longest prefix like -1,234.5E3; nothing numeric is an error."""
    i, n = 0, len(s)
    neg = s.startswith("-")
    if neg:
        i = 1
    if s.startswith("\u221e", i):
        return float("-inf") if neg else float("inf")
    if s.startswith("NaN", i):
        return float("nan")
    digits, seen = [], False
    while i < n and (s[i].isdecimal() or (s[i] == "," and seen)):
        if s[i] != ",":
            digits.append(str(unicodedata.decimal(s[i])))
            seen = True
        i += 1
    frac = []
    if i < n and s[i] == ".":
        i += 1
        while i < n and s[i].isdecimal():
            frac.append(str(unicodedata.decimal(s[i])))
            i += 1
    if not digits and not frac:
        raise BadValue(f"not a number: {s!r}")
    text = "".join(digits or ["0"]) + "." + "".join(frac or ["0"])
    m = re.match(r"E([+-]?\d+)", s[i:])
    if m:
        text += "e" + m.group(1)
    v = float(text)
    return -v if neg else v


def _double(s: str) -> float:
    try:
        return _java_double(s)
    except (ValueError, OverflowError) as e:
        raise BadValue(f"not a double: {s!r}") from e


def _float(s: str) -> float:
    return _double(s)  # Arrow rounds to float32


def _boolean(s: str) -> bool:
    low = s.lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise BadValue(f"not a boolean: {s!r}")


def _decimal(typ: pa.Decimal128Type) -> Callable[[str], Decimal]:
    quantum = Decimal(1).scaleb(-typ.scale)

    def run(s: str) -> Decimal:
        t = s.replace(",", "")
        if not _BIG_DECIMAL.fullmatch(t):
            raise BadValue(f"not a decimal: {s!r}")
        try:
            d = Decimal(t).quantize(quantum, rounding=ROUND_HALF_UP, context=_WIDE)
        except InvalidOperation as e:
            raise BadValue(f"does not fit decimal({typ.precision},{typ.scale}): {s!r}") from e
        if len(d.as_tuple().digits) > typ.precision and d != 0:
            raise BadValue(f"does not fit decimal({typ.precision},{typ.scale}): {s!r}")
        return d
    return run


def _int_of(bits: int, sign_safe: bool) -> Callable[[str], int]:
    parse = lambda s: _java_int(s, bits)  # noqa: E731
    return _sign_safe(parse) if sign_safe else parse


def caster(typ: pa.DataType, options: XmlOptions) -> Callable[[str], object]:
    """The parser of a leaf type (trimming and nullValue are the caller's)."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return str
    if pa.types.is_int64(typ):
        return _int_of(64, True)
    if pa.types.is_int32(typ):
        return _int_of(32, True)
    if pa.types.is_int16(typ):
        return _int_of(16, False)
    if pa.types.is_int8(typ):
        return _int_of(8, False)
    if pa.types.is_float64(typ):
        return _sign_safe(_double)
    if pa.types.is_float32(typ):
        return _sign_safe(_float)
    if pa.types.is_boolean(typ):
        return _boolean
    if pa.types.is_decimal(typ):
        return _decimal(typ)
    if pa.types.is_timestamp(typ):
        return spark_datetime.timestamp_parser(options.timestamp_format, ntz=typ.tz is None)
    if pa.types.is_date(typ):
        return spark_datetime.date_parser(options.date_format, fallback=False)
    raise BadValue(f"XML values cannot be read as {typ}")


def type_name(typ: pa.DataType) -> str:
    """Spark's name of a type, for messages."""
    names = {"int64": "bigint", "int32": "int", "int16": "smallint", "int8": "tinyint", "float": "float",
             "double": "double", "bool": "boolean", "date32[day]": "date"}
    if pa.types.is_timestamp(typ):
        return "timestamp"
    if pa.types.is_decimal(typ):
        return f"decimal({typ.precision},{typ.scale})"
    return names.get(str(typ), str(typ))
