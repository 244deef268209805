"""Schemas of the formats that carry their own types (Parquet, ORC, Avro): the Arrow types Spark reads them as, and
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
    holds = {file_name: name for name, file_name in column_of(file_schema.names, fields).items()}
    declared = {f.name: f.type for f in fields}
    out: list[str] = []
    for f in file_schema:
        if f.name not in holds:
            out.append(f.name)
        else:
            out.extend(_new_nested(f.type, declared[holds[f.name]], f.name))
    return tuple(out)


def _new_nested(have: pa.DataType, want: pa.DataType, path: str) -> list[str]:
    if not (pa.types.is_struct(have) and pa.types.is_struct(want)):
        return []
    holds = {file_name: name for name, file_name in column_of([f.name for f in have], list(want)).items()}
    out: list[str] = []
    for f in have:
        if f.name not in holds:
            out.append(f"{path}.{f.name}")
        else:
            out.extend(_new_nested(f.type, want.field(holds[f.name]).type, f"{path}.{f.name}"))
    return out


# Names match as Spark matches them by default (spark.sql.caseSensitive=false): the same name, or else the
# one that differs only by case, at the top level and inside structs.

def column_of(file_names: list[str], fields: list[pa.Field]) -> dict[str, str]:
    """Declared name -> the file's column that holds it."""
    exact = set(file_names)
    by_lower: dict[str, str] = {}
    for n in file_names:
        by_lower.setdefault(n.lower(), n)
    out = {}
    for f in fields:
        if f.name in exact:
            out[f.name] = f.name
        elif f.name.lower() in by_lower:
            out[f.name] = by_lower[f.name.lower()]
    return out


def as_declared(arr, want: pa.DataType):
    """The file's column with its struct fields named as declared where they differ only by case (a view:
    the data is not copied); conform then casts by name."""
    t = _renamed(arr.type, want)
    if t == arr.type:
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([c.view(t) for c in arr.chunks], t)
    return arr.view(t)


def _renamed(have: pa.DataType, want: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        names = column_of([f.name for f in have], list(want))
        declared = {file_name: want.field(name) for name, file_name in names.items()}
        return pa.struct([pa.field(declared[f.name].name, _renamed(f.type, declared[f.name].type), f.nullable)
                          if f.name in declared else f for f in have])
    if pa.types.is_list(have) and (pa.types.is_list(want) or pa.types.is_large_list(want)):
        item = have.value_field
        return pa.list_(pa.field(item.name, _renamed(item.type, want.value_type), item.nullable))
    if pa.types.is_map(have) and pa.types.is_map(want):
        return pa.map_(have.key_field, pa.field(have.item_field.name, _renamed(have.item_type, want.item_type),
                                                have.item_field.nullable))
    return have
