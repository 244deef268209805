"""Parquet: only the declared columns are read; the file's own types are cast to the schema's later."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from .base import FileRows, FormatOptions

RANDOM_ACCESS = True  # read from an open file: only the declared columns' pages are fetched
COMPRESSION = None    # Parquet compresses inside the file


def read(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    pf = pq.ParquetFile(source)
    names = pf.schema_arrow.names
    declared = {f.name for f in fields}
    present = [f.name for f in fields if f.name in names]
    table = pf.read(columns=present)
    unknown = tuple(n for n in names if n not in declared and n != fo.rescued_column)
    if unknown and fo.rescued_column:  # the columns the schema lacks, kept per row as JSON
        from .rescue import rescued_json
        table = table.append_column(fo.rescued_column, rescued_json(pf.read(columns=list(unknown)), file))
    return FileRows(table, unknown=unknown)


def infer(source, fo: FormatOptions, infer_types: bool) -> pa.Schema:
    return pq.ParquetFile(source).schema_arrow
