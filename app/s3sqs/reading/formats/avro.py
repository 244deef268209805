"""Avro: fastavro decodes the records (its C extension), the declared columns go to Arrow in the types
Spark's Avro reader gives (avro_schema.py); conform casts them to the schema's types by name. With a
rescued-data column, values that do not fit and undeclared fields go there (typed_rescue.py)."""
from __future__ import annotations

import io

import pyarrow as pa

from .avro_schema import UnsupportedAvro, arrow_schema, fixer
from .base import FileRows, FormatOptions, MalformedFile
from .typed_rescue import finish
from .typed_schema import column_of, unknown_fields

RANDOM_ACCESS = False
COMPRESSION = None  # Avro compresses inside the file, block by block (deflate, snappy, zstandard...)


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    records, writer = _open(data)
    schema, columns = _schema(writer)
    unknown = unknown_fields(schema, fields)
    try:
        rows = list(records)
    except Exception as e:  # the bytes are in memory: any failure is the file's (a truncated or corrupt block)
        raise MalformedFile(f"could not decode the Avro file: {type(e).__name__}: {e}") from None
    # The declared columns; all of them when the undeclared ones' values are to be rescued.
    wanted = schema.names if fo.rescued_column else list(column_of(schema.names, fields).values())
    if not wanted:  # none of the declared columns: still one row (of nulls) per record
        return FileRows(pa.table({"_rows": pa.nulls(len(rows))}), unknown=unknown)
    arrays = {}
    for name in wanted:
        fix = fixer(columns[name], {})
        values = [r.get(name) for r in rows]
        arrays[name] = pa.array([fix(v) for v in values] if fix else values, schema.field(name).type)
    return finish(pa.table(arrays), fields, fo, file, unknown)


def infer(data: pa.Buffer, fo: FormatOptions, infer_types: bool = True) -> pa.Schema:
    return _schema(_open(data)[1])[0]


def _open(data: pa.Buffer):
    import fastavro  # here, not at the top: every executor imports the readers, few read Avro (30 ms)
    try:
        records = fastavro.reader(io.BytesIO(memoryview(data)))
    except Exception as e:  # the bytes are in memory: any failure is the file's
        raise MalformedFile(f"not an Avro file ({e}); check the option fileFormat (avro)") from None
    return records, records.writer_schema


def _schema(writer) -> tuple[pa.Schema, dict]:
    """The Arrow schema of the file's records and each top-level field's (expanded) Avro schema."""
    from fastavro.schema import expand_schema
    expanded = expand_schema(writer)
    try:
        schema = arrow_schema(expanded)
    except UnsupportedAvro as e:
        raise MalformedFile(f"an Avro file Spark cannot read: {e}") from None
    return schema, {f["name"]: f["type"] for f in expanded["fields"]}
