"""XML: the rows Spark 4.0's XML reader gives (rowTag elements; attributes as prefixed fields; the text of an
element with attributes under valueTag; repeated elements as arrays; nested elements as structs; an
element read as STRING keeps its inner XML), with its malformed-row behaviour per mode.

The file is decoded once. A plain file (rows of one flat shape, nothing unusual in the text) is read by
fast.py: one regular expression and column-wise conversion. Any other file, and any file with a value
that does not fit, takes the step-by-step path: its rows are found by Spark's text scan (records.py),
all rows are parsed by expat in one go (per row only when one is broken: events.py), and each row is
converted as Spark's parser converts it (convert.py). pyarrow has no XML reader.
"""
from __future__ import annotations

import codecs
import json

import pyarrow as pa

from ....config.format_options import XmlOptions
from ....core.vocabulary import Mode
from ..base import FileRows, FormatOptions, MalformedFile
from .convert import Converter, Partial, XmlSyntax
from .events import row_events
from .fast import TAKEN, NotFast
from .fast import read as read_plain
from .inference import infer_rows
from .records import block_end as _text_block_end
from .records import records

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension


def _text(data: pa.Buffer, opts: XmlOptions) -> tuple[str, bytes | None]:
    """The file's text, and its bytes when they are UTF-8."""
    raw = data.to_pybytes()
    utf8 = codecs.lookup(opts.encoding).name == "utf-8"
    return raw.decode(opts.encoding, errors="replace"), raw if utf8 else None


def block_end(data: bytes | bytearray, opts: XmlOptions) -> int:
    """Where a block of a big file's bytes may end: after its last whole row (records.block_end); 0:
    read more. The bytes are in an encoding where '<' and '>' are those bytes (any other is decoded into
    UTF-8 first: blocks.transcoded), so the text is scanned byte for byte (latin-1), with the row tag in
    the bytes' encoding."""
    tag = opts.row_tag.encode(opts.encoding).decode("latin-1")
    return _text_block_end(data.decode("latin-1"), tag)


def _rows(text: str, opts: XmlOptions, file_start: bool = True) -> tuple[list[str], list[list[tuple]]]:
    """The rows' texts and events. Text with no row that does not begin with '<' is not XML, unless it is
    a later block of a big file (what follows its last row)."""
    tag = opts.row_tag
    recs = records(text, tag)
    if file_start and not recs and text.strip() and not text.lstrip("\ufeff \t\r\n").startswith("<"):
        raise MalformedFile(f"not an XML file (fileFormat xml, rowTag '{tag}'): it does not begin with '<' "
                            f"and has no <{tag}> element; check the fileFormat and the rowTag option")
    return recs, row_events(recs)


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    text, utf8 = _text(data, fo.options)
    try:
        rows = read_plain(text, fields, fo, utf8)
    except NotFast:
        rows = None
    if rows is not None:
        TAKEN["fast"] += 1
        return rows
    TAKEN["exact"] += 1
    return read_exact(text, fields, fo, file)


def read_exact(text: str, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    """The step-by-step path, row by row as Spark's parser goes."""
    recs, events = _rows(text, fo.options, not fo.later_block)
    conv = Converter(fields, fo.options)
    rescue = fo.rescued_column is not None
    out, rescued, bad_rows = [], [], 0
    reason = None
    for n, ev in enumerate(events):
        conv.misfit = None
        conv.rescue = {} if rescue else None
        try:
            row, bad = conv.row(ev), None
        except Partial as p:
            row, bad = p.row, p.cause
        if bad is not None:
            bad_rows += 1
            why = _reason(n, bad, conv.misfit)
            reason = reason or why
            if fo.mode == Mode.FAILFAST:
                raise MalformedFile(f"malformed row (mode FAILFAST): {why}")
            if fo.mode == Mode.DROPMALFORMED:
                continue
            if conv.misfit and rescue:
                conv.rescue[conv.misfit[0]] = conv.misfit[1]
            if isinstance(bad, XmlSyntax) or row is None:
                if rescue:
                    conv.rescue["_row"] = recs[n]
        out.append(row or {})
        if rescue:
            r = conv.rescue
            if r and file is not None:
                r["_file_path"] = file.uri
            rescued.append(json.dumps(r, default=str, separators=(",", ":")) if r else None)
    table = _table(out, fields)
    if rescue:
        table = table.append_column(fo.rescued_column, pa.array(rescued, pa.string()))
    dropped = bad_rows if fo.mode == Mode.DROPMALFORMED else 0
    return FileRows(table, bad_rows, dropped, tuple(sorted(conv.unknown)), reason)


def _reason(n: int, bad: Exception, misfit: tuple | None) -> str:
    if isinstance(bad, XmlSyntax):
        return f"row {n + 1} is not well-formed XML: {bad}"
    if misfit:
        path, text, typ = misfit
        return f"row {n + 1}: column '{path}': value {text[:100]!r} is not a valid {typ}"
    return f"row {n + 1}: {str(bad)[:200]}"


def _table(rows: list[dict], fields: list[pa.Field]) -> pa.Table:
    if not fields:
        return pa.table({})
    arr = pa.array(rows, pa.struct(fields))
    return pa.Table.from_arrays(arr.flatten(), schema=pa.schema(fields))


def infer(data: pa.Buffer, fo: FormatOptions, infer_types: bool) -> pa.Schema:
    _, events = _rows(_text(data, fo.options)[0], fo.options)
    return infer_rows(events, fo.options, infer_types)
