"""CSV, read as Spark's CSV reader reads it (every option of CsvOptions, and the modes).

The common good file goes through pyarrow's C++ reader (fast.py). Files or options it cannot read
exactly like Spark go the Python way: tokens.py splits records as Spark's parser does, rows.py
converts them and applies the mode. Columns map to the schema by POSITION, as in Spark (its header check,
enforceSchema, is on by default and only warns), header or not; with a header, the names past the
schema's width are the columns it lacks (`unknown`), and their values go to the rescued column under them.
"""
from __future__ import annotations

import pyarrow as pa

from ....config.format_options import CsvOptions
from ..base import FileRows, FormatOptions, MalformedFile, decode
from . import fast
from .rows import build
from .tokens import Dialect, records
from .values import is_plain

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension
_HEAD_BYTES = 64 << 10


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    for f in fields:
        if not is_plain(f.type):
            raise MalformedFile(f"CSV has no nested types: column {f.name!r} is declared {f.type}; declare it "
                                "STRING (Spark refuses STRUCT, ARRAY and MAP columns for CSV too)")
    if fo.options.encoding != "utf-8":  # decoded first, as the Python way decodes it: pyarrow reads UTF-8
        data = pa.py_buffer(decode(data, fo.options.encoding).encode("utf-8"))
        fo = fo.in_utf8()
    opts = fo.options
    header = _header(data, opts) if opts.header else None
    # Columns map by position: a header column past the schema's width is one the schema lacks; a header that
    # names the schema's own columns otherwise (a renamed column) is read by position, as Spark reads it.
    unknown = tuple(dict.fromkeys((header or ())[len(fields):]))
    if fast.eligible(fields, opts) and (header is None or _starts_with_header(data)) \
            and not (fo.rescued_column and header is not None and len(header) > len(fields)):
        table = fast.read(data, fields, opts, skip_header=header is not None)
        if table is not None:
            if fo.rescued_column:
                table = table.append_column(fo.rescued_column, pa.nulls(table.num_rows, pa.string()))
            return FileRows(table, unknown=unknown)
    rows = _python_read(data, fields, fo, file)
    rows.unknown = unknown
    return rows


def _python_read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file) -> FileRows:
    opts = fo.options
    recs = records(decode(data, opts.encoding), Dialect.of(opts))
    names = [t or "" for t in next(recs, [])] if opts.header else []
    return build(recs, fields, fo, names, file.uri if file is not None else None)


def _header(data: pa.Buffer, opts: CsvOptions) -> list[str]:
    """The header's names, from the first record of the file's first part."""
    head = data.slice(0, min(data.size, _HEAD_BYTES))
    if b"\n" not in head.to_pybytes() and b"\r" not in head.to_pybytes():
        head = data
    first = next(records(decode(head, opts.encoding), Dialect.of(opts)), [])
    return [t or "" for t in first]


def _starts_with_header(data: pa.Buffer) -> bool:
    """pyarrow skips the first line as the header; Spark skips blank lines before it."""
    head = data.slice(0, min(data.size, 4096)).to_pybytes()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    line = head.split(b"\n", 1)[0].split(b"\r", 1)[0]
    return bool(line.strip(bytes(range(33))))
