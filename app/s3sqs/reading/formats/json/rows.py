"""The slow path: a file's records through the type-guided walker (walk.py), one row per object.

A record is a line (JSON lines) or the whole file (multiLine). As in Spark: an object is a row; an array of
objects is a row per object (a misfit in one marks them all malformed); an empty array is no row; anything
else, or text that is not JSON, is one malformed row of nulls. What follows the record's first value on
its line is ignored.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal

import pyarrow as pa

from ....config.format_options import JsonOptions
from ....core.vocabulary import Mode
from ..base import FileRows, FormatOptions, MalformedFile
from .walk import Context, Misfit, Raw, Syntax, reader_of, scan, struct_reader, ws

_LINES = re.compile(r"\r\n|\r|\n")


def records(text: str, opts: JsonOptions) -> list[str]:
    if opts.multi_line:
        return [text]
    sep = opts.line_sep
    return _LINES.split(text) if sep is None else text.split(sep)


def slow_read(text: str, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    ctx = Context(fo.options)
    extras: list = []
    top = struct_reader({f.name: reader_of(f.type, ctx, f.name + ".") for f in fields}, ctx, "", extras)
    rows, bad, rescued = [], [], []
    reason = None
    unknown: dict[str, None] = {}
    for n, rec in enumerate(records(text, fo.options), 1):
        start = ws(rec, 0)
        if start == len(rec):
            continue
        got, why = _record(rec, start, top, extras)
        for row, extra in got:
            rows.append(row)
            bad.append(why is not None)
            for k, v in extra:
                if not isinstance(v, Raw):
                    unknown.setdefault(k, None)
            rescued.append(_rescued(extra, rec if row is None else None, file) if fo.rescued_column else None)
        if why is not None:
            reason = reason or f"record {n}: {why}"
            if fo.mode == Mode.FAILFAST:
                raise MalformedFile(f"malformed JSON record {n} (mode FAILFAST): {why}. Check the file, the "
                                    "schema, and the options multiLine, lineSep, timestampFormat and dateFormat")
    table = pa.Table.from_arrays([pa.array([r.get(f.name) if r else None for r in rows], f.type) for f in fields],
                                 names=[f.name for f in fields])
    if fo.rescued_column:
        table = table.append_column(fo.rescued_column, pa.array(rescued, pa.string()))
    malformed = sum(bad)
    if fo.mode == Mode.DROPMALFORMED and malformed:
        table = table.filter(pa.array([not b for b in bad]))
    return FileRows(table, malformed, malformed if fo.mode == Mode.DROPMALFORMED else 0,
                    tuple(unknown) + tuple(ctx.unknown), reason)


def _record(rec: str, i: int, top, extras: list):
    """[(row or None, extras)] and the reason when the record is malformed."""
    try:
        if rec[i] == "{":
            row, extra, _, why = _row(rec, i, top, extras)
            return [(row, extra)], why
        if rec[i] == "[":
            out, why = [], None
            i = ws(rec, i + 1)
            if rec[i] == "]":
                return [], None
            while True:
                if rec[i] != "{":
                    scan(rec, i)
                    return [(None, [])], "an array element is not an object"
                row, extra, i, bad = _row(rec, i, top, extras)
                why = why or bad
                out.append((row, extra))
                i = ws(rec, i)
                if rec[i] == ",":
                    i = ws(rec, i + 1)
                elif rec[i] == "]":
                    return out, why
                else:
                    raise Syntax(f"expected ',' or ']' at character {i}")
        scan(rec, i)
        return [(None, [])], "a record must be an object or an array of objects"
    except (Syntax, ValueError, IndexError, RecursionError) as e:
        return [(None, [])], f"not JSON ({e})"


def _row(rec, i, top, extras):
    extras.clear()
    why = None
    try:
        row, end = top(rec, i)
    except Misfit as m:
        row, end, why = m.partial, m.end, m.reason
    return row, list(extras), end, why


def _rescued(extra: list, raw_record: str | None, file) -> str | None:
    parts = [(k, _dump(_parse(v) if isinstance(v, Raw) else v)) for k, v in extra]
    if raw_record is not None:
        parts.append(("_row", json.dumps(raw_record, ensure_ascii=False)))
    if not parts:
        return None
    if file is not None:
        parts.append(("_file_path", json.dumps(file.uri, ensure_ascii=False)))
    return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in parts) + "}"


def _parse(text: str):
    return scan(text, 0)[0]


def _dump(v) -> str:
    """Compact JSON, numbers as written (Decimal keeps a float's digits)."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_dump(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_dump(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)
