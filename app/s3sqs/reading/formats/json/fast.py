"""The fast path: pyarrow's JSON-lines reader, used only where its values are Spark's.

pyarrow refuses (rather than alters) most of what Spark reads differently: a number or object into a
string column, a string or a fraction into an integer, duplicate keys, an array or text after a record.
The rest is decided here from the declared types before reading: timestamps and dates are read as text and
parsed with Spark's rules; a map, binary, or a timestamp, date, decimal or float inside a struct or array
sends the file to the slow path. After reading: a decimal wider than its precision, a timestamp that does
not parse do too. Not caught (a line-count check would cost ~10% of the read): two records on one line,
of which Spark reads only the first and pyarrow both.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from ....config.format_options import ISO_TIMESTAMP, JsonOptions
from ..base import FileRows, FormatOptions
from ..common.spark_datetime import BadDatetime, date_parser, timestamp_parser

BLOCK_BYTES = 16 << 20
_PLAIN = (pa.types.is_string, pa.types.is_boolean, pa.types.is_integer, pa.types.is_float64)
# The strings Spark's lenient parsing and pyarrow's cast read alike: ISO with a zone (or without: UTC).
_ISO_ZONED = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$"
_ISO_LOCAL = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?$"


def fast_plan(fields: list[pa.Field], opts: JsonOptions) -> pa.Schema | None:
    """The schema pyarrow reads with (timestamps, dates as text; FLOAT as DOUBLE), or None: slow path."""
    if opts.multi_line or opts.line_sep not in (None, "\n", "\r\n"):
        return None
    out = []
    for f in fields:
        t = f.type
        if pa.types.is_timestamp(t) or pa.types.is_date32(t):
            t = pa.string()
        elif pa.types.is_float32(t):
            t = pa.float64()
        elif not (pa.types.is_decimal128(t) or _plain(t)):
            return None
        out.append(pa.field(f.name, t))
    return pa.schema(out)


def _plain(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return all(_plain(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t):
        return _plain(t.value_type)
    return any(check(t) for check in _PLAIN)


def fast_read(data: pa.Buffer, fields: list[pa.Field], plan: pa.Schema, fo: FormatOptions) -> FileRows | None:
    """The file's rows, or None when only the slow path can read it as Spark does."""
    try:
        # Strict first: a file with only declared fields costs no more than an "ignore" read. Only a file
        # with undeclared fields is read again with them, to name them ("infer" costs their parsing).
        table = _read(data, plan, "error")
    except pa.ArrowInvalid as e:
        if "unexpected field" not in str(e):
            return None
        try:
            table = _read(data, plan, "infer")
        except pa.ArrowInvalid:
            return None
    if table.num_rows != _lines(data) and table.num_rows != _nonblank_lines(data):
        return None  # two documents on one line (Spark reads the first), or a top-level array's elements
    unknown = _unknown(table.schema, plan)
    if unknown and fo.rescued_column:
        return None  # the undeclared values go into the rescued column: the slow path has them
    arrays = []
    for f in fields:
        col = table.column(f.name)
        if plan.field(f.name).type != f.type:  # read as text or DOUBLE: converted here
            col = _convert(col, f.type, fo.options)
            if col is None:
                return None
        arrays.append(_fit(col, f.type))
    if any(a is None for a in arrays):
        return None
    names = [f.name for f in fields]
    if fo.rescued_column:
        arrays.append(pa.nulls(table.num_rows, pa.string()))
        names.append(fo.rescued_column)
    return FileRows(pa.Table.from_arrays(arrays, names=names), unknown=unknown)


def _lines(data: pa.Buffer) -> int:
    if not data.size:
        return 0
    a = np.frombuffer(data, np.uint8)
    return int(np.count_nonzero(a == 10)) + int(a[-1] != 10)


def _nonblank_lines(data: pa.Buffer) -> int:
    """The lines with something on them: one record each, to Spark (counted only when some are blank)."""
    return sum(1 for line in data.to_pybytes().split(b"\n") if line.strip(b" \t\r"))


def _read(data: pa.Buffer, plan: pa.Schema, extra: str) -> pa.Table:
    return pajson.read_json(pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=BLOCK_BYTES),
                            parse_options=pajson.ParseOptions(explicit_schema=plan, unexpected_field_behavior=extra))


def _unknown(got: pa.Schema, plan: pa.Schema) -> tuple[str, ...]:
    declared = {f.name: f.type for f in plan}
    out = []
    for f in got:
        if f.name not in declared:
            out.append(f.name)
        else:
            out.extend(_nested_unknown(f.type, declared[f.name], f.name + "."))
    return tuple(out)


def _nested_unknown(got: pa.DataType, want: pa.DataType, path: str) -> list[str]:
    if pa.types.is_struct(got) and pa.types.is_struct(want):
        names = {want.field(i).name: want.field(i).type for i in range(want.num_fields)}
        out = []
        for i in range(got.num_fields):
            g = got.field(i)
            out += [path + g.name] if g.name not in names else _nested_unknown(g.type, names[g.name],
                                                                              f"{path}{g.name}.")
        return out
    if pa.types.is_list(got) and pa.types.is_list(want):
        return _nested_unknown(got.value_type, want.value_type, path)
    return []


def _fit(col, typ: pa.DataType):
    """Nested struct columns read with "infer" may hold undeclared fields: cast them away. A decimal wider
    than its precision (pyarrow does not check it; Spark nulls it): None."""
    if pa.types.is_decimal(typ):
        limit = pa.scalar(10 ** (typ.precision - typ.scale), pa.decimal128(38, 0))
        if col.null_count < len(col) and pc.any(pc.greater_equal(pc.abs(col), limit)).as_py():
            return None
    return col if col.type == typ else col.cast(typ)


def _convert(col, typ: pa.DataType, opts: JsonOptions):
    """Timestamps and dates from text with Spark's rules; None if a value does not parse."""
    if pa.types.is_float32(typ):
        return col.cast(typ)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_timestamp(typ):
        fast = None
        if opts.timestamp_format == ISO_TIMESTAMP and typ.tz is not None:
            fast = _iso_timestamps(col, typ)
        parse = timestamp_parser(opts.timestamp_format, ntz=typ.tz is None)
    else:
        fast, parse = None, date_parser(opts.date_format)
    values = col.to_pylist() if fast is None else None
    if values is None:
        return fast
    try:
        out = [None if v is None else parse(v) for v in values]
    except BadDatetime:
        return None
    return pa.array(out, pa.int64() if pa.types.is_timestamp(typ) else pa.int32()).cast(typ)


def _iso_timestamps(col: pa.Array, typ: pa.DataType):
    """Vectorised for the common ISO forms; None when some value needs Spark's full rules."""
    zoned = pc.match_substring_regex(col, _ISO_ZONED)
    local = pc.match_substring_regex(col, _ISO_LOCAL)
    if (pc.sum(pc.or_(zoned, local).cast(pa.int64())).as_py() or 0) != len(col) - col.null_count:
        return None
    try:
        as_local = pc.cast(pc.if_else(local, col, None), pa.timestamp(typ.unit)).cast(pa.int64())
        as_zoned = pc.cast(pc.if_else(zoned, col, None), typ).cast(pa.int64())
    except pa.ArrowInvalid:  # e.g. 2020-02-30: Spark nulls it; the slow path says so
        return None
    return pc.coalesce(as_zoned, as_local).cast(typ)
