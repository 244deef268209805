"""The fast path: pyarrow's C++ CSV reader, for the options and files it reads exactly as Spark does.

Every column is read as text and converted by Arrow's kernels (csv_values.exact_cast), so a value Arrow
would read differently from Spark is never accepted silently: the file goes the Python way instead. The
decision is made before reading from the options and the declared types (`eligible`), and from a scan of
the bytes for what pyarrow's parser treats differently from Spark's (`_plain_quoting`): quotes that neither
open nor close a value (text after a closing quote, a doubled quote inside a value, whitespace around a
quoted value) and the escape char before a quote. Then a row of the wrong width, a value that does not
convert, or a quoted line break where Spark reads line by line sends the file the Python way too.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ...config.format_options import ISO_DATE, ISO_TIMESTAMP
from .csv_values import exact_cast

BLOCK_BYTES = 16 << 20
_FAST_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_integer,
               pa.types.is_floating, pa.types.is_boolean, pa.types.is_decimal)


def eligible(fields: list[pa.Field], opts: dict) -> bool:
    """Whether pyarrow can read these options and types exactly as Spark does (given plain bytes)."""
    if opts["comment"] or opts["ignoreLeadingWhiteSpace"] or opts["ignoreTrailingWhiteSpace"]:
        return False
    if opts["lineSep"] is not None or opts["encoding"] != "utf-8" or not fields:
        return False
    sep, quote = opts["sep"], opts["quote"]
    if not (" " < sep < "\x7f") or (quote and not (" " < quote < "\x7f")) or sep == quote:
        return False
    for f in fields:
        t = f.type
        if any(ok(t) for ok in _FAST_TYPES):
            continue
        if pa.types.is_date32(t) and opts["dateFormat"] == ISO_DATE:
            continue
        if pa.types.is_timestamp(t) and (t.tz is None or opts["timestampFormat"] == ISO_TIMESTAMP):
            continue
        return False
    return True


def _count(blob: pa.Array, pattern: bytes, regex: bool = False) -> int:
    f = pc.count_substring_regex if regex else pc.count_substring
    return f(blob, pattern=pattern)[0].as_py()


def _plain_quoting(data: pa.Buffer, opts: dict) -> tuple[bool, bool]:
    """(the file has the quote char, every quote in it opens or closes a value and none is escaped)."""
    quote = opts["quote"]
    if not quote:
        return False, True
    blob = pa.Array.from_buffers(pa.large_binary(), 1, [None, pa.array([0, data.size], pa.int64()).buffers()[1],
                                                        data])
    if _count(blob, quote.encode()) == 0:
        return False, True
    esc = opts["escape"]
    if esc and esc != quote and _count(blob, (esc + quote).encode()):
        return True, False
    s, q = _class_escape(opts["sep"]), _class_escape(quote)
    odd = f"[^{s}\\r\\n]{q}[^{s}\\r\\n]".encode()
    return True, _count(blob, odd, regex=True) == 0


def _class_escape(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def read(data: pa.Buffer, fields: list[pa.Field], opts: dict, skip_header: bool) -> pa.Table | None:
    """The declared columns, or None when this file must go the Python way."""
    has_quote, plain = _plain_quoting(data, opts)
    if not plain:
        return None
    n = len(fields)
    nv, ev = opts["nullValue"], opts["emptyValue"]
    simple_nulls = nv == "" and ev == ""
    invalid = []
    parse = pacsv.ParseOptions(delimiter=opts["sep"], quote_char=opts["quote"] or False, double_quote=True,
                               escape_char=False, newlines_in_values=bool(opts["multiLine"]),
                               ignore_empty_lines=True, invalid_row_handler=lambda row: invalid.append(1) or "skip")
    names = [f"c{i}" for i in range(n)]
    read_opts = pacsv.ReadOptions(column_names=names, skip_rows=1 if skip_header else 0, block_size=BLOCK_BYTES)
    convert = pacsv.ConvertOptions(column_types={c: pa.string() for c in names}, strings_can_be_null=True,
                                   null_values=sorted({"", nv}), quoted_strings_can_be_null=simple_nulls)
    try:
        table = pacsv.read_csv(pa.BufferReader(data), read_options=read_opts, parse_options=parse,
                               convert_options=convert)
    except pa.ArrowInvalid:  # e.g. bytes that are not UTF-8: Spark reads them with replacement chars
        return None
    if invalid:
        return None
    arrays = []
    for name, f in zip(names, fields):
        col = table.column(name)
        if not simple_nulls:
            if ev != "":
                col = pc.if_else(pc.equal(col, ""), ev, col)
            if nv != "":
                col = pc.if_else(pc.equal(col, nv), pa.scalar(None, pa.string()), col)
        if has_quote and _breaks_spark_reads_differently(col, opts):
            return None
        if n == 1 and pc.any(pc.match_substring_regex(col, r"^[\x00-\x20]*$")).as_py():
            return None  # a blank line: Spark skips it (or, with multiLine, reads it as a value)
        out = exact_cast(col, f.type, opts)
        if out is None:
            return None
        arrays.append(out)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _breaks_spark_reads_differently(col, opts: dict) -> bool:
    """A quoted line break: without multiLine Spark splits the row there; with it, \\r\\n becomes \\n."""
    return bool(pc.any(pc.match_substring_regex(col, "\r" if opts["multiLine"] else "[\r\n]")).as_py())
