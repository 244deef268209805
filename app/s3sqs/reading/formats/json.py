"""JSON lines: pyarrow's typed reader first; a file it cannot take goes the tolerant way (tolerant.py)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.json as pajson

from ...core.vocabulary import Mode
from .base import FileRows, FormatOptions, MalformedFile
from .tolerant import BLOCK_BYTES, tolerant

RANDOM_ACCESS = False
COMPRESSION = "detect"  # .gz, .bz2, .zst by extension


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    try:
        table = pajson.read_json(
            pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=BLOCK_BYTES),
            parse_options=pajson.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore"))
    except pa.ArrowInvalid as e:
        if fo.mode == Mode.FAILFAST:
            raise MalformedFile(f"malformed row (mode FAILFAST): {e}") from None
        return tolerant(_values(data, fields), fields, fo)
    return FileRows(table)


def _values(data: pa.Buffer, fields: list[pa.Field]) -> tuple[dict[str, list], list]:
    """Each line's values by column, and the raw line where a line is not a JSON object."""
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
