"""A file's own schema, for schema inference (driver) and the proposals of schema evolution (executor),
read within bounded memory whatever the file's size.

Text and binaryFile files all have one schema, Parquet and ORC give theirs from their footer, Avro from
its header. A small text file is read whole. A big one (blocks.read_in_blocks) gives it from its first
block of whole rows, about SAMPLE_BYTES, as Auto Loader samples its files; when a proposal must type
columns the reader found further on (`wanted`), the next blocks are read until each of them is seen.
"""
from __future__ import annotations

import pyarrow as pa

from ..core.files import Piece, S3File
from .big import text_blocks
from .blocks import read_in_blocks
from .filesystems import Filesystems, fetch
from .formats import reader_of

SAMPLE_BYTES = 32 << 20  # a big text file's first block read for its schema (a block runs to about twice this)
_HEADER_READ_BYTES = 1 << 20


def infer_file(filesystems: Filesystems, f: S3File, spec, infer_types: bool,
               wanted: tuple[str, ...] = ()) -> pa.Schema:
    """The file's own schema; with `wanted`, one that holds those columns when the file has them."""
    fs = filesystems.of(f)
    fo = spec.format
    reader = reader_of(fo.file_format)
    fixed = getattr(reader, "SCHEMA", None)
    if fixed is not None:  # text, binaryFile: every file has the same columns, nothing to read
        return fixed
    if reader.RANDOM_ACCESS:  # Parquet, ORC: the footer
        with fs.open_input_file(f.path) as fh:
            return reader.infer(fh, fo, infer_types)
    if not read_in_blocks(fo.file_format, fo.options, f.path, f.size):
        return reader.infer(fetch(fs, f, reader.COMPRESSION), fo, infer_types)
    if hasattr(reader, "read_parts"):  # a big Avro file: its header, read in a few large requests
        with fs.open_input_stream(f.path, compression=None, buffer_size=_HEADER_READ_BYTES) as stream:
            return reader.infer(stream, fo, infer_types)
    schema = None
    fo, blocks = text_blocks(fs, Piece(f), reader, fo, SAMPLE_BYTES)
    try:
        for data in blocks:
            found = reader.infer(pa.py_buffer(data), fo, infer_types)
            schema = found if schema is None else _with_columns(schema, found, wanted)
            if all(name in schema.names for name in wanted):
                break
    finally:
        blocks.close()
    return schema if schema is not None else reader.infer(pa.py_buffer(b""), fo, infer_types)


def _with_columns(schema: pa.Schema, found: pa.Schema, wanted: tuple[str, ...]) -> pa.Schema:
    """`schema` and those of the `wanted` columns it lacks that `found` has (as found there first)."""
    for field in found:
        if field.name in wanted and field.name not in schema.names:
            schema = schema.append(field)
    return schema
