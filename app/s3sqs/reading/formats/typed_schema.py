"""Schemas of the formats that carry their own types (ORC, Avro): the Arrow types Spark reads them as, and
the fields a file has that the declared schema lacks."""
from __future__ import annotations

import pyarrow as pa


def spark_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type of the Spark type a file's type reads as (as Spark hands Arrow data over): timestamps
    are Spark's TIMESTAMP, microseconds in UTC; strings and binaries have 32-bit offsets."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, spark_type(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field("element", spark_type(t.value_type)))  # Spark's name for it
    if pa.types.is_map(t):
        return pa.map_(spark_type(t.key_type), spark_type(t.item_type))
    return t


def unknown_fields(file_schema: pa.Schema, fields: list[pa.Field]) -> tuple[str, ...]:
    """Names the file has that `fields` lack: top-level names, and "a.b" for new fields of declared structs."""
    declared = {f.name: f.type for f in fields}
    out: list[str] = []
    for f in file_schema:
        if f.name not in declared:
            out.append(f.name)
        else:
            out.extend(_new_nested(f.type, declared[f.name], f.name))
    return tuple(out)


def _new_nested(have: pa.DataType, want: pa.DataType, path: str) -> list[str]:
    if not (pa.types.is_struct(have) and pa.types.is_struct(want)):
        return []
    wanted = {f.name: f.type for f in want}
    out: list[str] = []
    for f in have:
        if f.name not in wanted:
            out.append(f"{path}.{f.name}")
        else:
            out.extend(_new_nested(f.type, wanted[f.name], f"{path}.{f.name}"))
    return out
