"""Parquet: only the declared columns are read; the file's own types are cast to the schema's later."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from .base import FileRows, FormatOptions

RANDOM_ACCESS = True  # read from an open file: only the declared columns' pages are fetched
COMPRESSION = None    # Parquet compresses inside the file


def read(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    pf = pq.ParquetFile(source)
    present = [f.name for f in fields if f.name in pf.schema_arrow.names]
    return FileRows(pf.read(columns=present))
