"""The Arrow schema of a table's data files, from the Spark schema of the job's output: types each table
format can hold, and the partition columns it can use. Pure, with unit tests."""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from .target import SinkError

TABLE_FORMATS = ("delta", "iceberg", "parquet")  # parquet: a file sink's folder (file_sink_log.py)
# Partition columns hold one value per file, spelled out in folder names and Delta's log.
PARTITION_TYPES = (T.StringType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DateType, T.BooleanType)


def table_arrow_schema(schema: T.StructType, table_format: str) -> pa.Schema:
    """The Arrow schema of the table's files for a Spark schema. Iceberg has no 8/16-bit integers, and
    every format stores instants as UTC microseconds."""
    if table_format not in TABLE_FORMATS:
        raise SinkError(f"unknown table format {table_format!r}; choose one of {', '.join(TABLE_FORMATS)}")
    return pa.schema([_arrow_field(f.name, f.dataType, f.nullable, table_format) for f in schema.fields])


def _arrow_field(name: str, t: T.DataType, nullable: bool, fmt: str) -> pa.Field:
    return pa.field(name, _arrow_type(name, t, fmt), nullable=nullable)


def _arrow_type(name: str, t: T.DataType, fmt: str) -> pa.DataType:
    small_int = pa.int32() if fmt == "iceberg" else None
    simple = [
        (T.BooleanType, pa.bool_()), (T.ByteType, small_int or pa.int8()), (T.ShortType, small_int or pa.int16()),
        (T.IntegerType, pa.int32()), (T.LongType, pa.int64()), (T.FloatType, pa.float32()),
        (T.DoubleType, pa.float64()), (T.StringType, pa.string()), (T.CharType, pa.string()),
        (T.VarcharType, pa.string()), (T.BinaryType, pa.binary()), (T.DateType, pa.date32()),
        (T.TimestampNTZType, pa.timestamp("us")), (T.TimestampType, pa.timestamp("us", tz="UTC")),
    ]
    for cls, arrow in simple:
        if isinstance(t, cls):
            return arrow
    if isinstance(t, T.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, T.ArrayType):
        return pa.list_(_arrow_field("element", t.elementType, t.containsNull, fmt))
    if isinstance(t, T.MapType):
        return pa.map_(_arrow_type(name, t.keyType, fmt),
                       _arrow_field("value", t.valueType, t.valueContainsNull, fmt))
    if isinstance(t, T.StructType):
        return pa.struct([_arrow_field(f.name, f.dataType, f.nullable, fmt) for f in t.fields])
    raise SinkError(f"column {name!r} has type {t.simpleString()}, which the {fmt} sink cannot write; "
                    "cast it in --transform (for example to STRING)")


def file_schema(table_schema: pa.Schema, partition_by: tuple[str, ...], table_format: str) -> pa.Schema:
    """Delta and Spark's file sink keep partition values only in the log or folder names; Iceberg's
    add-files reads them from the file."""
    if table_format in ("delta", "parquet"):
        return pa.schema([f for f in table_schema if f.name not in partition_by])
    return table_schema


def fit_to(batch: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.Table:
    """Select the table's columns by name and cast (session time zone to UTC, large to plain strings)."""
    table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
    return table.select(schema.names).cast(schema)


def check_partitioning(schema: T.StructType, partition_by: tuple[str, ...]) -> None:
    fields = {f.name: f for f in schema.fields}
    missing = [c for c in partition_by if c not in fields]
    if missing:
        raise SinkError(f"--partition-by columns {missing} are not in the output; the output has "
                        f"{', '.join(fields)} (after --transform, if any)")
    for c in partition_by:
        if not isinstance(fields[c].dataType, PARTITION_TYPES):
            raise SinkError(f"--partition-by column {c!r} has type {fields[c].dataType.simpleString()}; "
                            "partition by a string, integer, date or boolean column")
    if len(partition_by) == len(fields):
        raise SinkError("--partition-by names every output column; a table needs at least one data column")


def direct_write_refusal(schema: T.StructType, partition_by: tuple[str, ...]) -> str | None:
    """Why the parquet sink's files cannot be written outside Spark for this output, or None: a column type
    or partition column type the table files cannot hold (Spark's file sink can)."""
    try:
        table_arrow_schema(schema, "parquet")
        check_partitioning(schema, partition_by)
    except SinkError as e:
        return str(e)
    return None


def added_fields(have: pa.Schema, want: pa.Schema) -> list[str] | None:
    """The fields `want` adds to a table's schema `have` ("a.b" for a nested one), when it only adds fields
    (schema evolution: the table can take it by merging); None when it differs in any other way (a type,
    a dropped field), which no merge may hide. By name, as the table formats resolve columns: their order
    is not compared (delta-rs keeps partition columns last when it merges)."""
    return _added(pa.struct(list(have)), pa.struct(list(want)), "")


def _added(have: pa.DataType, want: pa.DataType, path: str) -> list[str] | None:
    have, want = _plain(have), _plain(want)
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        old = {have.field(i).name: have.field(i).type for i in range(have.num_fields)}
        new = {want.field(i).name: want.field(i).type for i in range(want.num_fields)}
        if not old.keys() <= new.keys():
            return None
        out = [f"{path}{name}" for name in new if name not in old]
        for name, typ in old.items():
            inner = _added(typ, new[name], f"{path}{name}.")
            if inner is None:
                return None
            out += inner
        return out
    if pa.types.is_list(have) and pa.types.is_list(want):
        return _added(have.value_type, want.value_type, path)
    if pa.types.is_map(have) and pa.types.is_map(want):
        keys = _added(have.key_type, want.key_type, path)
        return None if keys != [] else _added(have.item_type, want.item_type, path)
    return [] if have == want else None


def _plain(t: pa.DataType) -> pa.DataType:
    """Arrow spellings that store the same thing (pyiceberg reads large types, delta-rs plain ones)."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(t.value_type)
    return t
