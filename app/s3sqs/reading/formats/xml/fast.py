"""The fast path for plain XML files: rows of the same flat shape, read by one regular expression and
converted column by column.

A file qualifies when it has nothing that makes Spark's text scan or its parser differ from a plain reading:
no comments, CDATA sections, document type declarations or processing instructions (beyond the XML
declaration), no `]]>` and no character XML forbids. Its first row gives the shape: the row element without
attributes or text, holding distinct leaf elements without attributes (`<a>text</a>` or `<a/>`), whose
text has no markup and no references but the five predefined entities. Every `<rowTag` the scan would
find must match that shape; then each row is exactly the row Spark parses, and the values are the texts.

Values are converted per column with Spark's rules (white space, nullValue, the type's parser): numbers,
dates and timestamps in their common forms by Arrow's casts (a regular expression first proves that the
text is one Arrow and Java read alike), everything else by the exact parsers of values.py. Any value that
does not fit, any other shape, and a rescued-data column with something to rescue leave the file to the
step-by-step path (NotFast), which also gives the malformed-row handling.
"""
from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from ....config.format_options import ISO_DATE, ISO_TIMESTAMP, XmlOptions
from ..base import FileRows, FormatOptions
from .records import _WS
from .values import caster

TAKEN: Counter = Counter()  # which path read each file ("fast" or "exact"): for tests and diagnostics


class NotFast(Exception):
    """The file needs the step-by-step path."""


_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML does not allow
_FORBIDDEN_BYTES = bytes(range(9)) + b"\x0b\x0c" + bytes(range(14, 32))
_XML_WS = " \t\n\r"
_VALUE = r"((?:[^<&\r]++|&(?:amp|lt|gt|quot|apos);)*+)"
_LEAF = re.compile(r"<([A-Za-z_][A-Za-z0-9_.-]*)(?:/>|>[^<]*</\1>)")
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"))


def _plain(text: str, utf8: bytes | None) -> bool:
    """Nothing in the text that a plain reading would get wrong. `utf8`: the file's bytes when it is UTF-8
    (checking bytes for forbidden characters is several times faster than a search of the text)."""
    head = text.lstrip("\ufeff \t\r\n")
    allowed_pis = 1 if head.startswith("<?xml") else 0
    if "<!" in text or "]]>" in text or text.count("<?") != allowed_pis:
        return False
    if utf8 is None:
        return _FORBIDDEN.search(text) is None
    return (len(utf8.translate(None, _FORBIDDEN_BYTES)) == len(utf8)
            and b"\xef\xbf\xbe" not in utf8 and b"\xef\xbf\xbf" not in utf8)


def _shape(text: str, tag: str) -> tuple[list[str], re.Pattern, re.Pattern] | None:
    """The first row's leaf names, the pattern of a row of that shape and the pattern of any row start."""
    t = re.escape(tag)
    start = re.compile(rf"<{t}(?=[>{_WS}])")
    m = start.search(text)
    if m is None:
        return None
    end = text.find(f"</{tag}>", m.end())
    if end < 0:
        return None
    names = _LEAF.findall(text, m.end(), end)
    if not names or len(set(names)) != len(names) or tag in names:
        return None
    between = "[ \t\r\n]*"
    leaves = "".join(f"{between}(?:<{re.escape(n)}>{_VALUE}</{re.escape(n)}>|<{re.escape(n)}/>)" for n in names)
    return names, re.compile(f"<{t}>{leaves}{between}</{t}>"), start


def read(text: str, fields: list[pa.Field], fo: FormatOptions, utf8: bytes | None = None) -> FileRows | None:
    """The file's rows, or None when the file is not plain (then nothing was decided). `utf8`: the file's
    bytes if it is UTF-8 (a faster check)."""
    opts = fo.options
    if not fields or not _plain(text, utf8):
        return None
    shape = _shape(text, opts.row_tag)
    if shape is None:
        return None
    names, row, start = shape
    matches = row.findall(text)
    if not matches or len(matches) != len(start.findall(text)):
        return None  # some row has another shape
    columns = list(zip(*matches)) if len(names) > 1 else [matches]
    by_name: dict[str, pa.Field] = {}
    for f in fields:
        by_name.setdefault(f.name.lower(), f)
    out, unknown, taken = {}, [], set()
    refs = "&" in text
    for name, values in zip(names, columns):
        f = by_name.get(name.lower())
        if f is None:
            unknown.append(name)
            continue
        if f.name in taken or not _leaf(f.type):
            raise NotFast(f"column {f.name}")
        taken.add(f.name)
        out[f.name] = convert(_unescape(list(values)) if refs else list(values), f.type, opts)
    if unknown and fo.rescued_column is not None:
        raise NotFast("fields to rescue")
    n = len(matches)
    table = pa.Table.from_arrays([out.get(f.name, pa.nulls(n, f.type)) for f in fields], schema=pa.schema(fields))
    if fo.rescued_column is not None:
        table = table.append_column(fo.rescued_column, pa.nulls(n, pa.string()))
    return FileRows(table, 0, 0, tuple(sorted(set(unknown))), None)


def _leaf(typ: pa.DataType) -> bool:
    return not (pa.types.is_struct(typ) or pa.types.is_list(typ) or pa.types.is_large_list(typ)
                or pa.types.is_map(typ))


def _unescape(values: list[str]) -> list[str]:
    out = []
    for v in values:
        if "&" in v:
            for ref, ch in _ENTITIES:
                v = v.replace(ref, ch)
        out.append(v)
    return out


def convert(values: list[str], typ: pa.DataType, opts: XmlOptions) -> pa.Array:
    """Element texts ("" for an empty element) as the column's type, with Spark's convertField rules."""
    trim, null = opts.ignore_surrounding_spaces, opts.null_value
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        if trim:
            values = [v.strip() for v in values]
        if null is not None:
            values = [None if v == null else v for v in values]
        return pa.array(values, typ)
    fast = _typed_as_is(values, typ, opts)
    if fast is not None:
        return fast
    # Other types: white space alone is no value; then trimming, nullValue and the type's parser.
    clean = [(v.strip() if trim else v) if v.strip(_XML_WS) else None for v in values]
    if null is not None:
        clean = [None if v == null else v for v in clean]
    return _typed(clean, typ, opts)


_INT_DIGITS = {64: 18, 32: 9, 16: 4, 8: 2}  # digits that always fit, so Arrow's range check never differs
_DOUBLE = r"^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$"
_DAY = r"[1-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_TIMESTAMP = (rf"^{_DAY}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{{1,6}})?"
              r"(?:Z|[+-](?:0[0-9]|1[0-7]):[0-5][0-9])$")


def _arrow_form(typ: pa.DataType, opts: XmlOptions) -> str | None:
    """A regular expression of texts that Arrow's cast reads as Spark does, for this type and options."""
    if pa.types.is_integer(typ) and pa.types.is_signed_integer(typ):
        return rf"^-?[0-9]{{1,{_INT_DIGITS[typ.bit_width]}}}$"
    if pa.types.is_float64(typ) or pa.types.is_float32(typ):
        return _DOUBLE
    if pa.types.is_date32(typ) and opts.date_format == ISO_DATE:
        return f"^{_DAY}$"
    if (pa.types.is_timestamp(typ) and typ.unit == "us" and typ.tz is not None
            and opts.timestamp_format == ISO_TIMESTAMP):
        return _TIMESTAMP
    return None


def _typed_as_is(values: list[str], typ: pa.DataType, opts: XmlOptions) -> pa.Array | None:
    """The column by Arrow's cast when every text, as it stands, has the form Arrow reads as Spark does (the
    forms hold no white space, so nothing needs trimming) and none is the nullValue; else None."""
    form = _arrow_form(typ, opts)
    if form is None:
        return None
    arr, null = pa.array(values, pa.string()), opts.null_value
    if null is not None and pc.any(pc.equal(arr, null)).as_py():
        return None
    return _by_arrow(arr, typ, form)


def _by_arrow(arr: pa.Array, typ: pa.DataType, form: str) -> pa.Array | None:
    """The texts cast by Arrow when each (null aside) has `form`, else None."""
    if pc.all(pc.match_substring_regex(arr, form)).as_py() is False:
        return None
    try:
        if pa.types.is_float32(typ):  # as the exact path: a double, then rounded to float
            return pc.cast(arr, pa.float64()).cast(pa.float32(), safe=False)
        return pc.cast(arr, typ)
    except pa.ArrowInvalid:
        return None  # out of range or an impossible date: the exact parser decides


def _typed(clean: list[str | None], typ: pa.DataType, opts: XmlOptions) -> pa.Array:
    form = _arrow_form(typ, opts)
    out = _by_arrow(pa.array(clean, pa.string()), typ, form) if form is not None else None
    if out is not None:
        return out
    try:
        parse = caster(typ, opts)
        return pa.array([None if v is None else parse(v) for v in clean], typ)
    except (ValueError, OverflowError) as e:
        raise NotFast(str(e)) from None
