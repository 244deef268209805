"""Avro: fastavro decodes the records (its C extension), the declared columns go to Arrow in the types
Spark's Avro reader gives (avro_schema.py); conform casts them to the schema's types by name. With a
rescued-data column, values that do not fit and undeclared fields go there (typed_rescue.py). A big file
is read a few of its blocks at a time (`read_parts`), so memory is bounded by PART_BYTES of decoded blocks."""
from __future__ import annotations

import io
from typing import Iterator

import pyarrow as pa

from .avro_pieces import READ_BYTES, SYNC_BYTES, piece_stream
from .avro_schema import UnsupportedAvro, arrow_schema, fixer
from .base import FileRows, FormatOptions, MalformedFile
from .typed_rescue import finish
from .typed_schema import column_of, unknown_fields

RANDOM_ACCESS = False
COMPRESSION = None  # Avro compresses inside the file, block by block (deflate, snappy, zstandard...)
PART_BYTES = 16 << 20  # a big file's rows go out once this many bytes of its blocks (decompressed) are decoded


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    records, writer = _open(data)
    try:
        rows = list(records)
    except Exception as e:  # the bytes are in memory: any failure is the file's (a truncated or corrupt block)
        raise MalformedFile(f"could not decode the Avro file: {type(e).__name__}: {e}") from None
    return _rows(rows, *_schema(writer), fields, fo, file)


def read_parts(source, fields: list[pa.Field], fo: FormatOptions, file=None, start: int = 0,
               end: int | None = None) -> Iterator[FileRows]:
    """The file's rows a few blocks at a time, from an open file (a big file). A read that fails (OSError)
    is the storage's, raised as it is; anything else that fails to decode is the file's.

    A piece [start, end) of a split file holds the blocks whose sync marker (the 16 bytes before a block)
    starts in it, as Spark's Avro reader splits a file: each block is read by exactly one piece."""
    if not isinstance(source, pa.NativeFile):
        yield from _parts(source, fields, fo, file, start, end)
        return
    buffered = io.BufferedReader(source, buffer_size=READ_BYTES)  # fastavro reads a few bytes at a time: on
    try:                                                           # S3 each would be a GET
        yield from _parts(buffered, fields, fo, file, start, end)
    finally:
        buffered.detach()  # the caller's file stays open (the caller closes it)


def _parts(source, fields: list[pa.Field], fo: FormatOptions, file, start: int, end: int | None):
    import fastavro
    shift = 0  # the file offset of the stream's offset 0 past the header
    try:
        if start > 0:
            source, shift = piece_stream(source, start, end)
        blocks = fastavro.block_reader(source)
    except OSError:
        raise
    except Exception as e:
        raise MalformedFile(f"not an Avro file ({e}); check the option fileFormat (avro)") from None
    schema, columns = _schema(blocks.writer_schema)  # once for the file, not per part
    rows: list[dict] = []
    held, parts = 0, 0
    # A block whose marker starts at or past `end` is the next piece's: it is not decoded here.
    for size, records in _blocks(blocks, None if end is None else end - shift + SYNC_BYTES):
        rows.extend(records)
        held += size
        if held >= PART_BYTES:
            yield _rows(rows, schema, columns, fields, fo, file)
            rows, held, parts = [], 0, parts + 1
    if rows or not parts:
        yield _rows(rows, schema, columns, fields, fo, file)


def _blocks(blocks, stop: int | None) -> Iterator[tuple[int, list[dict]]]:
    """Each block's decoded size and records, up to the first that starts at `stop` (an offset in the
    stream) or later. A read that fails is the storage's; a block that does not decode is the file's."""
    try:
        for block in blocks:
            if stop is not None and block.offset >= stop:
                return
            yield block.bytes_.getbuffer().nbytes, list(block)
    except OSError:
        raise
    except Exception as e:
        raise MalformedFile(f"could not decode the Avro file: {type(e).__name__}: {e}") from None


def _rows(rows: list[dict], schema: pa.Schema, columns: dict, fields: list[pa.Field], fo: FormatOptions,
          file) -> FileRows:
    """Decoded records as the declared columns (all of them when the others' values are to be rescued)."""
    unknown = unknown_fields(schema, fields)
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
