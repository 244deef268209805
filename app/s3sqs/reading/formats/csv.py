"""CSV: pyarrow's typed reader first; rows of the wrong shape or values that do not fit send the file the
tolerant way (tolerant.py). Without a header, columns map to the schema by position, as in Spark."""
from __future__ import annotations

import csv as pycsv
import io
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pacsv

from ...core.vocabulary import Mode
from .base import FileRows, FormatOptions, MalformedFile
from .tolerant import BLOCK_BYTES, tolerant

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    try:
        result = _read(data, fields, fo.options)
    except pa.ArrowInvalid as e:
        if fo.mode == Mode.FAILFAST:
            raise MalformedFile(f"malformed row (mode FAILFAST): {e}") from None
        return tolerant(_as_text(data, fields, fo.options), fields, fo)
    if result.bad_rows:
        return tolerant(_as_text(data, fields, fo.options), fields, fo)
    return FileRows(result.table)


@dataclass
class _Read:
    table: pa.Table
    bad_rows: list[str]  # rows that could not be split into the declared columns, as text


def _read(data: pa.Buffer, fields: list[pa.Field], opts: dict, as_text: bool = False) -> _Read:
    """Typed (or all-text) read; rows of the wrong shape are set aside and returned with the table."""
    header = bool(opts.get("header", False))
    bad_rows: list[str] = []

    def set_aside(row) -> str:
        bad_rows.append(row.text)
        return "skip"
    parse = pacsv.ParseOptions(delimiter=opts.get("sep", ","), quote_char=opts.get("quote") or False,
                               escape_char=opts.get("escape") or False, newlines_in_values=True,
                               invalid_row_handler=set_aside)
    nulls = sorted({"", opts.get("nullValue", "")})
    names = [f.name for f in fields] if header else [f"f{i}" for i in range(len(fields))]
    read_opts = pacsv.ReadOptions(encoding=opts.get("encoding", "utf-8"), block_size=BLOCK_BYTES,
                                  autogenerate_column_names=not header)
    types = {n: (pa.string() if as_text else f.type) for n, f in zip(names, fields)}
    convert = pacsv.ConvertOptions(column_types=types, include_columns=names, include_missing_columns=True,
                                   null_values=nulls, strings_can_be_null=True)
    table = pacsv.read_csv(pa.BufferReader(data), read_options=read_opts, parse_options=parse,
                           convert_options=convert)
    if not header:  # columns map to the schema by position, as in Spark; extra columns are dropped
        table = table.rename_columns([f.name for f in fields])
    return _Read(table, bad_rows)


def _as_text(data: pa.Buffer, fields: list[pa.Field], opts: dict) -> tuple[dict[str, list], list]:
    """Every value as text, the well-shaped rows first, then the others padded or cut to the schema."""
    result = _read(data, fields, opts, as_text=True)
    columns = {f.name: result.table.column(f.name).to_pylist() for f in fields}
    raw: list = [None] * result.table.num_rows
    dialect = {"delimiter": opts.get("sep", ","), "quotechar": opts.get("quote", '"')}
    if opts.get("escape"):
        dialect["escapechar"] = opts["escape"]
    nulls = {"", opts.get("nullValue", "")}
    for text in result.bad_rows:
        values = next(pycsv.reader(io.StringIO(text), **dialect), [])
        values = (values + [None] * len(fields))[:len(fields)]
        for f, v in zip(fields, values):
            columns[f.name].append(None if v in nulls else v)
        raw.append(text)
    return columns, raw
