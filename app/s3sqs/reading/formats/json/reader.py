"""JSON (lines, or one document per file with multiLine) read as Spark's JSON reader reads it.

The common good file goes through pyarrow's C++ reader (fast.py); a file it cannot read exactly as
Spark does (a nested value into a STRING column, a malformed row, a map, multiLine...) goes through the
slow, type-guided path (rows.py, walk.py). Schema inference: inference.py.
"""
from __future__ import annotations

import pyarrow as pa

from ..base import FileRows, FormatOptions, decode
from .fast import fast_plan, fast_read
from .inference import infer_schema
from .rows import slow_read

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    opts = fo.options
    plan = fast_plan(fields, opts)
    if plan is not None:
        utf8 = data if opts.encoding == "utf-8" else pa.py_buffer(decode(data, opts.encoding).encode())
        rows = fast_read(utf8, fields, plan, fo)
        if rows is not None:
            return rows
    return slow_read(decode(data, opts.encoding), fields, fo, file)


def infer(data: pa.Buffer, fo: FormatOptions, infer_types: bool) -> pa.Schema:
    return infer_schema(decode(data, fo.options.encoding), fo.options, infer_types)
