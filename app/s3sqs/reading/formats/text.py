"""Text: one row per line in a `value` column, or the whole file as one row (wholetext), as Spark's text source.

Lines end at \\n, \\r\\n or \\r by default (Hadoop's line reader), or at exactly `lineSep`. A separator at the
very end of the file does not start another row; empty lines in between are rows. The bytes are kept as
they are, as Spark keeps them (it does not check that they are UTF-8). Splitting runs in Arrow's C++
kernels; only a file with a bare \\r in it goes through Python's `bytes.splitlines`.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .base import FileRows, FormatOptions

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension, as Spark's Hadoop codecs
VALUE = "value"
SCHEMA = pa.schema([pa.field(VALUE, pa.string())])


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    opts = fo.options
    if opts.wholetext:
        values = _whole(data)
    elif opts.line_sep is not None:
        values = _split(data, opts.line_sep.encode("utf-8"))
    elif data.size and pc.find_substring(_whole_binary(data), b"\r")[0].as_py() >= 0:
        values = pa.array(data.to_pybytes().splitlines(), pa.binary())  # \n, \r\n and \r, as Hadoop
    else:
        values = _split(data, b"\n")
    # Spark's text source has one STRING column, whatever its name (`value` unless the schema says otherwise).
    name = fields[0].name if len(fields) == 1 else VALUE
    return FileRows(pa.table({name: _as_string(values)}))


def infer(data, fo: FormatOptions, infer_types: bool = False) -> pa.Schema:
    return SCHEMA


def _whole_binary(data: pa.Buffer) -> pa.Array:
    """The buffer as a one-value large_binary array, without a copy."""
    offsets = pa.py_buffer(pa.array([0, data.size], pa.int64()).buffers()[1])
    return pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, data])


def _whole(data: pa.Buffer) -> pa.Array:
    return _whole_binary(data) if data.size else pa.array([], pa.large_binary())


def _split(data: pa.Buffer, sep: bytes) -> pa.Array:
    if not data.size:
        return pa.array([], pa.large_binary())
    lines = pc.list_flatten(pc.split_pattern(_whole_binary(data), sep))
    if data.size >= len(sep) and data.slice(data.size - len(sep)).to_pybytes() == sep:
        lines = lines.slice(0, len(lines) - 1)  # a final separator ends the last line; it opens none
    return lines


def _as_string(values: pa.Array) -> pa.Array:
    """Binary to STRING as Spark has it: the same bytes, not validated (Spark keeps invalid UTF-8 as is)."""
    large = values.cast(pa.large_binary()) if values.type != pa.large_binary() else values
    return large.view(pa.large_string()).cast(pa.string())
