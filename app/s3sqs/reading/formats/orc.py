"""ORC: only the declared columns are read (pyarrow's C++ reader); conform casts them to the schema's types.

Columns match by name, as Spark's native ORC reader does with files that carry real column names (and as
Spark does by default, a name that differs only by case matches: common/typed_schema.py). With a
rescued-data column, values that do not fit and undeclared columns go there (common/typed_rescue.py).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from .base import FileRows, FormatOptions, MalformedFile
from .common.typed_rescue import finish
from .common.typed_schema import column_of, spark_type, unknown_fields

RANDOM_ACCESS = True  # read from an open file: only the declared columns' stripes are fetched
COMPRESSION = None    # ORC compresses inside the file


def read(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> FileRows:
    f = _open(source)
    return _rows(f, fields, fo, file, f.nrows, lambda cols: f.read(columns=cols))


def read_parts(source, fields: list[pa.Field], fo: FormatOptions, file=None) -> Iterator[FileRows]:
    """The file's rows one stripe at a time (a big file: memory bounded by its largest stripe)."""
    f = _open(source)
    for i in range(f.nstripes):
        stripe = lambda cols, i=i: pa.Table.from_batches([f.read_stripe(i, columns=cols)])  # noqa: E731
        yield _rows(f, fields, fo, file, None, stripe)


def _rows(f, fields: list[pa.Field], fo: FormatOptions, file, n: int | None, read_columns) -> FileRows:
    schema = f.schema
    unknown = unknown_fields(schema, fields)
    # The declared columns; all of them when the undeclared ones' values are to be rescued.
    wanted = schema.names if fo.rescued_column else list(column_of(schema.names, fields).values())
    if not wanted:  # none of the declared columns: still one row (of nulls) per row of the file
        n = read_columns(schema.names[:1]).num_rows if n is None else n
        return FileRows(pa.table({"_rows": pa.nulls(n)}), unknown=unknown)
    return finish(read_columns(wanted), fields, fo, file, unknown)


def infer(source, fo: FormatOptions, infer_types: bool = True) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_type(f.type)) for f in _open(source).schema])


def _open(source):
    import pyarrow.orc as orc  # here, not at the top: every executor imports the readers, few read ORC
    try:
        return orc.ORCFile(source)
    except (OSError, pa.ArrowInvalid) as e:
        raise MalformedFile(f"not an ORC file ({e}); check the option fileFormat (orc)") from None
