"""Bytes of one file -> an Arrow table of the declared columns, with malformed rows handled per `mode`.

The fast path is pyarrow's typed reader. Only when it meets a row it cannot take does a file go the
tolerant way: every value as text, cast one column at a time, the values that do not fit set aside. So
good files cost nothing extra, and a bad row costs only its own file a slower parse.

Modes, as Spark users know them (CSV and JSON lines):
- PERMISSIVE: a malformed row keeps what parses; what does not is null, and the raw text goes to the
  rescued-data column when the schema declares one;
- DROPMALFORMED: malformed rows are dropped;
- FAILFAST: the first malformed row makes the whole file bad.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

PERMISSIVE, DROPMALFORMED, FAILFAST = "PERMISSIVE", "DROPMALFORMED", "FAILFAST"
MODES = (PERMISSIVE, DROPMALFORMED, FAILFAST)
BLOCK_BYTES = 16 << 20


class MalformedFile(ValueError):
    """FAILFAST met a malformed row; the message says which and why."""


@dataclass(frozen=True)
class Parsing:
    file_format: str
    reader_options: dict = field(default_factory=dict)
    mode: str = PERMISSIVE
    rescued_column: str | None = None  # filled only when the declared schema has it


@dataclass
class Parsed:
    table: pa.Table       # the declared data columns that the file has, plus the rescued column if asked
    malformed: int = 0    # rows with a value or a shape that did not fit
    dropped: int = 0      # of those, rows left out (DROPMALFORMED)


def parse(data: pa.Buffer, fields: list[pa.Field], p: Parsing) -> Parsed:
    """Parse a whole file held in memory."""
    if data.size == 0:  # an empty object is an empty file, not an error
        return Parsed(pa.table({f.name: pa.array([], f.type) for f in fields}))
    if p.file_format == "parquet":
        return parse_parquet(pa.BufferReader(data), fields)
    try:
        table = _read_json(data, fields) if p.file_format == "json" else _read_csv(data, fields, p.reader_options)
    except pa.ArrowInvalid as e:
        if p.mode == FAILFAST:
            raise MalformedFile(f"malformed row (mode FAILFAST): {e}") from None
        return _tolerant(data, fields, p)
    if isinstance(table, _ShapeErrors):
        return _tolerant(data, fields, p) if table.rows else Parsed(table.table)
    return Parsed(table)


def parse_parquet(source, fields: list[pa.Field]) -> Parsed:
    pf = pq.ParquetFile(source)
    present = [f.name for f in fields if f.name in pf.schema_arrow.names]
    return Parsed(pf.read(columns=present))


# -- the fast path --

@dataclass
class _ShapeErrors:
    table: pa.Table
    rows: list[str]


def _read_json(data: pa.Buffer, fields: list[pa.Field]) -> pa.Table:
    return pajson.read_json(
        pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=BLOCK_BYTES),
        parse_options=pajson.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"))


def _csv_names(fields: list[pa.Field], header: bool) -> list[str]:
    return [f.name for f in fields] if header else [f"f{i}" for i in range(len(fields))]


def _read_csv(data: pa.Buffer, fields: list[pa.Field], opts: dict, as_text: bool = False):
    """Typed (or all-text) read; rows of the wrong shape are set aside and returned with the table."""
    header = bool(opts.get("header", False))
    bad_rows: list[str] = []

    def set_aside(row) -> str:
        bad_rows.append(row.text)
        return "skip"
    parse = pacsv.ParseOptions(delimiter=opts.get("delimiter", ","), quote_char=opts.get("quote", '"'),
                               escape_char=opts.get("escape", False), newlines_in_values=True,
                               invalid_row_handler=set_aside)
    nulls = [""] + ([opts["nullValue"]] if "nullValue" in opts else [])
    names = _csv_names(fields, header)
    read = pacsv.ReadOptions(encoding=opts.get("encoding", "utf8"), block_size=BLOCK_BYTES,
                             autogenerate_column_names=not header)
    types = {n: (pa.string() if as_text else f.type) for n, f in zip(names, fields)}
    convert = pacsv.ConvertOptions(column_types=types, include_columns=names, include_missing_columns=True,
                                   null_values=nulls, strings_can_be_null=True)
    table = pacsv.read_csv(pa.BufferReader(data), read_options=read, parse_options=parse, convert_options=convert)
    if not header:  # columns map to the schema by position, as in Spark; extra columns are dropped
        table = table.rename_columns([f.name for f in fields])
    return _ShapeErrors(table, bad_rows) if bad_rows else table


# -- the tolerant path --

def _tolerant(data: pa.Buffer, fields: list[pa.Field], p: Parsing) -> Parsed:
    if p.file_format == "json":
        columns, raw = _json_as_values(data, fields)
    else:
        columns, raw = _csv_as_text(data, fields, p.reader_options)
    n = len(raw)
    bad = [False] * n
    rescued: list[dict] = [{} for _ in range(n)]
    for i, r in enumerate(raw):
        if r is not None:  # a row that could not be split into the declared columns
            bad[i] = True
            rescued[i]["_row"] = r
    arrays = []
    for f in fields:
        values = columns[f.name]
        arr, misfits = _cast_tolerant(values, f.type)
        for i in misfits:
            bad[i] = True
            rescued[i][f.name] = values[i]
        arrays.append(arr)
    malformed = sum(bad)
    if malformed and p.mode == FAILFAST:
        first = bad.index(True)
        raise MalformedFile(f"malformed row {first + 1} (mode FAILFAST): {json.dumps(rescued[first])[:300]}")
    names = [f.name for f in fields]
    table = pa.Table.from_arrays(arrays, names=names)
    if p.rescued_column:
        table = table.append_column(p.rescued_column, pa.array(
            [json.dumps(r, default=str) if r else None for r in rescued], pa.string()))
    if p.mode == DROPMALFORMED and malformed:
        table = table.filter(pa.array([not b for b in bad]))
        return Parsed(table, malformed, malformed)
    return Parsed(table, malformed)


def _csv_as_text(data: pa.Buffer, fields: list[pa.Field], opts: dict) -> tuple[dict[str, list], list]:
    """Every value as text, the well-shaped rows first, then the others padded or cut to the schema."""
    result = _read_csv(data, fields, opts, as_text=True)
    table, bad_rows = (result.table, result.rows) if isinstance(result, _ShapeErrors) else (result, [])
    columns = {f.name: table.column(f.name).to_pylist() for f in fields}
    raw: list = [None] * table.num_rows
    dialect = {"delimiter": opts.get("delimiter", ","), "quotechar": opts.get("quote", '"')}
    if opts.get("escape"):
        dialect["escapechar"] = opts["escape"]
    nulls = {""} | ({opts["nullValue"]} if "nullValue" in opts else set())
    for text in bad_rows:
        values = next(csv.reader(io.StringIO(text), **dialect), [])
        values = (values + [None] * len(fields))[:len(fields)]
        for f, v in zip(fields, values):
            columns[f.name].append(None if v in nulls else v)
        raw.append(text)
    return columns, raw


def _json_as_values(data: pa.Buffer, fields: list[pa.Field]) -> tuple[dict[str, list], list]:
    columns: dict[str, list] = {f.name: [] for f in fields}
    raw: list = []
    for line in data.to_pybytes().decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict):
            for f in fields:
                columns[f.name].append(None)
            raw.append(line)
            continue
        for f in fields:
            columns[f.name].append(doc.get(f.name))
        raw.append(None)
    return columns, raw


def _cast_tolerant(values: list, typ: pa.DataType) -> tuple[pa.Array, list[int]]:
    """The values as `typ`, with those that do not fit as nulls; returns their positions too."""
    try:
        return _as_type(values, typ), []
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
        pass
    out, misfits = [], []
    for i, v in enumerate(values):
        try:
            out.append(_as_type([v], typ)[0].as_py())
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                OverflowError):
            out.append(None)
            misfits.append(i)
    return pa.array(out, typ), misfits


def _as_type(values: list, typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in values], typ)
    if all(v is None or isinstance(v, str) for v in values):
        return pc.cast(pa.array(values, pa.string()), typ)  # text (CSV, or JSON strings): parse it
    if pa.types.is_integer(typ) and any(isinstance(v, float) or isinstance(v, bool) for v in values):
        raise TypeError("not an integer")
    return pa.array(values, typ)
