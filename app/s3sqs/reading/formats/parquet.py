"""Parquet: only the declared columns' pages are read; conform casts them to the schema's types. Names
match as ORC's do (common/typed_schema.py); with a rescued-data column, values that do not fit and
undeclared columns go there (common/typed_rescue.py)."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .base import FileRows, FormatOptions
from .common.typed_rescue import finish
from .common.typed_schema import column_of, spark_type, unknown_fields

RANDOM_ACCESS = True  # read from an open file: only the declared columns' pages are fetched
COMPRESSION = None    # Parquet compresses inside the file


def read(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    pf = pq.ParquetFile(source)
    return _rows(pf, fields, fo, file, pf.metadata.num_rows, lambda cols: pf.read(columns=cols))


def read_parts(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> Iterator[FileRows]:
    """The file's rows one row group at a time (a big file: memory bounded by its largest row group)."""
    pf = pq.ParquetFile(source)
    for i in range(pf.num_row_groups):
        yield _rows(pf, fields, fo, file, pf.metadata.row_group(i).num_rows,
                    lambda cols, i=i: pf.read_row_group(i, columns=cols))


def _rows(pf: pq.ParquetFile, fields: list[pa.Field], fo: FormatOptions, file, n: int, read_columns) -> FileRows:
    schema = pf.schema_arrow
    unknown = unknown_fields(schema, fields)
    if not unknown and not fo.rescued_column:  # the common file: straight through, no copy
        return FileRows(read_columns([f.name for f in fields if f.name in schema.names]))
    wanted = schema.names if fo.rescued_column else list(column_of(schema.names, fields).values())
    if not wanted:
        return FileRows(pa.table({"_rows": pa.nulls(n)}), unknown=unknown)
    return finish(read_columns(wanted), fields, fo, file, unknown)


def infer(source, fo: FormatOptions, infer_types: bool = True) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_type(f.type)) for f in pq.ParquetFile(source).schema_arrow])
