"""The fast path: pyarrow's C++ CSV reader, for the options and files it reads exactly as Spark does.

Columns are read as text and converted by Arrow's kernels (values.exact_cast); doubles are read typed,
pyarrow's conversion being Java's but for the spellings of NaN and infinity, which send the file back. A
value Arrow would read differently from Spark is never accepted silently: the file goes the Python way. The
decision is made before reading from the options and the declared types (`eligible`), and from a scan of
the bytes for what pyarrow's parser treats differently from Spark's (`_plain_quoting`): quotes that neither
open nor close a value (text after a closing quote, a doubled quote inside a value, whitespace around a
quoted value) and the escape char before a quote. Then a row of the wrong width, a value that does not
convert, a quoted line break where Spark reads line by line, or (with multiLine) line breaks of more
than one kind send the file the Python way too.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ....config.format_options import ISO_DATE, ISO_TIMESTAMP, CsvOptions
from .values import exact_cast

BLOCK_BYTES = 16 << 20
_BOM = b"\xef\xbb\xbf"
_NONE = np.empty(0, np.int64)
_FEW = 64  # quotes few enough to look between them one pair at a time
_FAST_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_integer,
               pa.types.is_floating, pa.types.is_boolean, pa.types.is_decimal)


def eligible(fields: list[pa.Field], opts: CsvOptions) -> bool:
    """Whether pyarrow can read these options and types exactly as Spark does (given plain bytes)."""
    if opts.comment or opts.ignore_leading_white_space or opts.ignore_trailing_white_space:
        return False
    if opts.line_sep is not None or opts.encoding != "utf-8" or not fields:
        return False
    sep, quote = opts.sep, opts.quote
    if not (" " < sep < "\x7f") or (quote and not (" " < quote < "\x7f")) or sep == quote:
        return False
    for f in fields:
        t = f.type
        if any(ok(t) for ok in _FAST_TYPES):
            continue
        if pa.types.is_date32(t) and opts.date_format == ISO_DATE:
            continue
        if pa.types.is_timestamp(t) and (t.tz is None or opts.timestamp_format == ISO_TIMESTAMP):
            continue
        return False
    return True


def _plain_quoting(data: pa.Buffer, opts: CsvOptions) -> np.ndarray | None:
    """The positions of the file's quotes if pyarrow's parser splits its values as Spark's does (None if
    not): the quotes pair up, each pair opening right after a delimiter or line start and closing right
    before one, and no quote follows the escape char."""
    quote = opts.quote
    if not quote:
        return _NONE
    a = np.frombuffer(data, np.uint8)
    at = np.flatnonzero(a == ord(quote))
    if at.size % 2:
        return None
    if at.size == 0:
        return at
    start = len(_BOM) if a[:len(_BOM)].tobytes() == _BOM else 0
    sep = ord(opts.sep)
    before = a.take(at - 1, mode="clip")  # the byte before each quote (the first one's is fixed below)
    opening_ok = _is_boundary(before[0::2], sep)
    opening_ok[0] |= at[0] == start
    closing = at[1::2] + 1
    ends_file = closing[-1] == a.size
    closing_ok = _is_boundary(a.take(closing[:-1] if ends_file else closing), sep)
    if not (opening_ok.all() and closing_ok.all()):
        return None
    esc = opts.escape
    if esc and esc != quote and (before[1:] == ord(esc)).any():
        return None
    return at


def _is_boundary(b: np.ndarray, sep: int) -> np.ndarray:
    """Which bytes end a value: the delimiter or a line break (compares: faster than a table lookup)."""
    return (b == sep) | (b == 10) | (b == 13)


def _break_inside_quotes(a: np.ndarray, at: np.ndarray, multi_line: bool) -> bool:
    """A line break Spark reads differently from pyarrow inside a quoted value: without multiLine any
    (Spark ends the row there); with it \r (Spark reads \r\n and \r as \n)."""
    if at.size <= _FEW:  # a few quoted values (a quoted header, say): look inside each
        breaks = (b"\r",) if multi_line else (b"\r", b"\n")
        return any(c in a[o:e].tobytes() for o, e in zip(at[0::2], at[1::2]) for c in breaks)
    has_cr = bool((a == 13).any())
    if multi_line and not has_cr:
        return False
    breaks = np.flatnonzero(a == 13) if multi_line else np.flatnonzero((a == 10) | (a == 13) if has_cr else a == 10)
    return bool((np.searchsorted(at, breaks) % 2).any())  # an odd count of quotes before it: inside quotes


def _lines(a: np.ndarray) -> int:
    """How many lines Spark splits the file into without multiLine (\n, \r\n and \r end one)."""
    lf = np.count_nonzero(a == 10)
    cr = np.count_nonzero(a == 13)
    crlf = np.count_nonzero((a[:-1] == 13) & (a[1:] == 10)) if cr else 0
    return lf + cr - crlf + (1 if a.size and a[-1] not in (10, 13) else 0)


def _mixed_line_breaks(a: np.ndarray) -> bool:
    """With multiLine, Spark ends records only at the first kind of line break in the file (a lone \n
    in a \r\n file is part of a value); pyarrow ends them at any. Alike when there is only one kind."""
    cr = np.flatnonzero(a == 13)
    if cr.size == 0:
        return False
    lf = np.count_nonzero(a == 10)
    if lf == 0:
        return False
    return not (lf == cr.size and (a.take(cr + 1, mode="clip") == 10).all() and cr[-1] + 1 < a.size)


def read(data: pa.Buffer, fields: list[pa.Field], opts: CsvOptions, skip_header: bool) -> pa.Table | None:
    """The declared columns, or None when this file must go the Python way."""
    quotes = _plain_quoting(data, opts)
    if quotes is None:
        return None
    a = np.frombuffer(data, np.uint8)
    if opts.multi_line and (_mixed_line_breaks(a) or quotes.size and _break_inside_quotes(a, quotes, True)):
        return None
    n = len(fields)
    nv, ev = opts.null_value, opts.empty_value
    simple_nulls = nv == "" and ev == ""
    invalid = []
    parse = pacsv.ParseOptions(delimiter=opts.sep, quote_char=opts.quote or False, double_quote=True,
                               escape_char=False, newlines_in_values=bool(opts.multi_line),
                               ignore_empty_lines=True, invalid_row_handler=lambda row: invalid.append(1) or "skip")
    names = [f"c{i}" for i in range(n)]
    read_opts = pacsv.ReadOptions(column_names=names, skip_rows=1 if skip_header else 0, block_size=BLOCK_BYTES)
    # Doubles straight to their type: pyarrow's CSV conversion accepts what Java's does (trimmed too),
    # except the spellings of NaN and infinity, checked after; everything else as text, cast exactly.
    typed = {c: (f.type if pa.types.is_floating(f.type) and simple_nulls else pa.string()) for c, f in zip(names, fields)}
    convert = pacsv.ConvertOptions(column_types=typed, strings_can_be_null=True,
                                   null_values=sorted({"", nv}), quoted_strings_can_be_null=simple_nulls)
    if not simple_nulls and data.size and data[data.size - 1] not in (10, 13):
        data = pa.py_buffer(data.to_pybytes() + b"\n")  # pyarrow takes a last empty field as quoted otherwise
    try:
        table = pacsv.read_csv(pa.BufferReader(data), read_options=read_opts, parse_options=parse,
                               convert_options=convert)
    except pa.ArrowInvalid:  # e.g. bytes that are not UTF-8: Spark reads them with replacement chars
        return None
    if invalid:
        return None
    if quotes.size and not opts.multi_line and (quotes.size <= _FEW or table.num_rows + skip_header != _lines(a)) \
            and _break_inside_quotes(a, quotes, False):
        return None  # (as many rows as lines: no line break can be inside quotes, no need to look)
    arrays = []
    for name, f in zip(names, fields):
        col = table.column(name)
        if col.type == f.type and pa.types.is_floating(f.type):
            if pc.all(pc.is_finite(col)).as_py() is False:
                return None
            arrays.append(col)
            continue
        if not simple_nulls:
            if ev != "":
                col = pc.if_else(pc.equal(col, ""), ev, col)
            if nv != "":
                col = pc.if_else(pc.equal(col, nv), pa.scalar(None, pa.string()), col)
        if n == 1 and pc.any(pc.match_substring_regex(col, r"^[\x00-\x20]*$")).as_py():
            return None  # a blank line: Spark skips it (or, with multiLine, reads it as a value)
        out = exact_cast(col, f.type, opts)
        if out is None:
            return None
        arrays.append(out)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
