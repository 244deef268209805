"""Avro: fastavro reads the blocks and decompresses them; polars decodes their records a column at a time
where it reads the schema as Spark does (columnar.py), fastavro record by record elsewhere. The
declared columns go to Arrow in the types Spark's Avro reader gives (schema.py); conform casts them
to the schema's types by name. With a rescued-data column, values that do not fit and undeclared fields
go there (common/typed_rescue.py). A big file is read a few of its blocks at a time (`read_parts`), so
memory is bounded by PART_BYTES of decompressed blocks."""
from __future__ import annotations

import io
import json
from typing import Iterator

import pyarrow as pa

from ..base import FileRows, FormatOptions, MalformedFile
from ..common.typed_rescue import finish
from ..common.typed_schema import column_of, unknown_fields
from . import columnar
from .pieces import READ_BYTES, SYNC_BYTES, piece_stream
from .schema import UnsupportedAvro, arrow_schema, fixer

RANDOM_ACCESS = False
COMPRESSION = None  # Avro compresses inside the file, block by block (deflate, snappy, zstandard...)
PART_BYTES = 16 << 20  # a big file's rows go out once this many bytes of its blocks (decompressed) are read
# polars costs about 0.4 ms a call whatever the records, fastavro 2-3 us a record: below this many records
# fastavro's records are quicker (measured: even at 100-200, 3x polars' speed at 400, 4x at 1,000).
COLUMNAR_RECORDS = 150


def read(data: pa.Buffer, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    # The bytes are in memory: any failure is the file's (a truncated or corrupt block), none the storage's.
    return next(_parts(io.BytesIO(memoryview(data)), fields, fo, file, 0, None, whole=True))


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


def _parts(source, fields: list[pa.Field], fo: FormatOptions, file, start: int, end: int | None,
           whole: bool = False) -> Iterator[FileRows]:
    shift = 0  # the file offset of the stream's offset 0 past the header
    try:
        if start > 0:
            source, shift = piece_stream(source, start, end)
    except OSError:
        raise
    except Exception as e:
        raise MalformedFile(f"not an Avro file ({e}); check the option fileFormat (avro)") from None
    blocks = _open(source)
    file_schema = _FileSchema(blocks)  # once for the file, not per part
    held, parts, batch = 0, 0, []
    # A block whose marker starts at or past `end` is the next piece's: it is not read here.
    for block in _blocks(blocks, None if end is None else end - shift + SYNC_BYTES):
        batch.append(block)
        held += block.bytes_.getbuffer().nbytes
        if not whole and held >= PART_BYTES:
            yield file_schema.rows(batch, fields, fo, file)
            batch, held, parts = [], 0, parts + 1
    if batch or not parts:
        yield file_schema.rows(batch, fields, fo, file)


def _blocks(blocks, stop: int | None) -> Iterator:
    """Each block (decompressed, not decoded), up to the first that starts at `stop` (an offset in the
    stream) or later. A read that fails is the storage's; a block that does not decompress is the file's."""
    try:
        for block in blocks:
            if stop is not None and block.offset >= stop:
                return
            yield block
    except OSError:
        raise
    except Exception as e:
        raise MalformedFile(f"could not decode the Avro file: {type(e).__name__}: {e}") from None


class _FileSchema:
    """A file's schema, as Arrow and as Avro, and how its blocks' records become rows."""

    def __init__(self, blocks):
        from fastavro.schema import expand_schema
        expanded = expand_schema(blocks.writer_schema)
        self.schema = _arrow(expanded)
        self.columns = {f["name"]: f["type"] for f in expanded["fields"]}  # each top-level field's Avro type
        self.columnar = columnar.decodes_as_spark(expanded)
        self.expanded = expanded

    def rows(self, blocks: list, fields: list[pa.Field], fo: FormatOptions, file) -> FileRows:
        """The blocks' records as the declared columns (all of them when the others' values are to be rescued)."""
        schema = self.schema
        unknown = unknown_fields(schema, fields)
        wanted = schema.names if fo.rescued_column else list(column_of(schema.names, fields).values())
        records = sum(b.num_records for b in blocks)
        if not wanted:  # none of the declared columns: still one row (of nulls) per record
            return FileRows(pa.table({"_rows": pa.nulls(records)}), unknown=unknown)
        table = None
        if self.columnar and records >= COLUMNAR_RECORDS:
            # Named types written out in full where they are used: polars does not follow a reference by name.
            table = columnar.decode(json.dumps(self.expanded), blocks, wanted, schema)
        if table is None:
            table = self._by_records(blocks, wanted)
        return finish(table, fields, fo, file, unknown)

    def _by_records(self, blocks: list, wanted: list[str]) -> pa.Table:
        try:
            rows = [r for b in blocks for r in b]
        except Exception as e:  # the blocks are in memory: any failure is the file's
            raise MalformedFile(f"could not decode the Avro file: {type(e).__name__}: {e}") from None
        arrays = {}
        for name in wanted:
            fix = fixer(self.columns[name], {})
            values = [r.get(name) for r in rows]
            arrays[name] = pa.array([fix(v) for v in values] if fix else values, self.schema.field(name).type)
        return pa.table(arrays)


def infer(source, fo: FormatOptions, infer_types: bool = True) -> pa.Schema:
    """The schema in the file's header (`source`: the file's bytes, or the open file, of which only the
    header is read)."""
    from fastavro.schema import expand_schema
    if isinstance(source, pa.Buffer):
        source = io.BytesIO(memoryview(source))
    return _arrow(expand_schema(_open(source).writer_schema))


def warm() -> None:
    """Import what reading Avro takes (fastavro, and polars: 0.2 s), before the stream's first files."""
    import fastavro  # noqa: F401
    columnar.polars_module()


def _open(source):
    """fastavro's block reader on the file (its header read). A read that fails is the storage's."""
    import fastavro  # here, not at the top: every executor imports the readers, few read Avro (30 ms)
    try:
        return fastavro.block_reader(source)
    except OSError:
        raise
    except Exception as e:
        raise MalformedFile(f"not an Avro file ({e}); check the option fileFormat (avro)") from None


def _arrow(expanded: dict) -> pa.Schema:
    """The Arrow schema of the file's records, from its expanded Avro schema."""
    try:
        return arrow_schema(expanded)
    except UnsupportedAvro as e:
        raise MalformedFile(f"an Avro file Spark cannot read: {e}") from None
