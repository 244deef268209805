"""Avro types as Spark's Avro reader maps them (SchemaConverters.toSqlType), as Arrow types, and the few value
conversions fastavro's Python values need on the way to Arrow.

  boolean, int, long, float, double, string, bytes -> BOOLEAN, INT, LONG, FLOAT, DOUBLE, STRING, BINARY
  enum -> STRING; fixed -> BINARY; record -> STRUCT; array -> ARRAY; map -> MAP<STRING, _>
  date -> DATE; timestamp-millis/micros -> TIMESTAMP; local-timestamp-millis/micros -> TIMESTAMP_NTZ;
  decimal -> DECIMAL(p, s); any other logical type -> its underlying type (uuid STRING, time-millis INT...)
  union with null -> the other type (every field is nullable, as Spark makes them); [int, long] -> LONG; [float, double] -> DOUBLE;
  any other union -> STRUCT<member0, member1, ...> of its non-null branches, one of them set per row.
"""
from __future__ import annotations

import datetime as dt
from typing import Callable

import pyarrow as pa

PRIMITIVES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
              "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null()}
TIMESTAMPS = {"timestamp-millis": "UTC", "timestamp-micros": "UTC", "local-timestamp-millis": None,
              "local-timestamp-micros": None}

Fix = Callable[[object], object]  # a fastavro value -> a value pyarrow takes for the Arrow type


class UnsupportedAvro(ValueError):
    """A schema Spark cannot read either (a top-level type that is not a record, a decimal over 38 digits)."""


def arrow_schema(writer_schema, named: dict | None = None) -> pa.Schema:
    """The rows' schema: the top-level record's fields as columns."""
    named = {} if named is None else named
    top = _resolve(writer_schema, named)
    if not isinstance(top, dict) or top.get("type") != "record":
        raise UnsupportedAvro(f"the top-level Avro type is {_type_name(top)}, not a record: Spark reads only "
                              "records into rows")
    loop = _self_reference(top)
    if loop:
        raise UnsupportedAvro(f"the record {loop} holds itself (a recursive schema): Spark reads no recursive "
                              "Avro schema")
    _remember(top, named)
    return pa.schema([_field(f["name"], f["type"], named) for f in top["fields"]])


def arrow_type(schema, named: dict) -> pa.DataType:
    return _field("_", schema, named).type


def _field(name: str, schema, named: dict) -> pa.Field:
    """Every field nullable, as Spark makes a file's schema (asNullable), whatever the union says."""
    branches = _non_null(schema) if isinstance(schema, list) else None
    if branches is not None and len(branches) == 1:
        return pa.field(name, arrow_type(branches[0], named))
    return pa.field(name, _type(schema, named))


def _type(schema, named: dict) -> pa.DataType:
    schema = _resolve(schema, named)
    if isinstance(schema, list):
        return _union(schema, named)
    if isinstance(schema, str):
        return PRIMITIVES[schema]
    _remember(schema, named)
    t, logical = schema["type"], schema.get("logicalType")
    if logical == "decimal" and t in ("bytes", "fixed"):
        if schema["precision"] > 38:
            raise UnsupportedAvro(f"decimal({schema['precision']}, {schema.get('scale', 0)}) has more than 38 "
                                  "digits, more than Spark's DECIMAL holds")
        return pa.decimal128(schema["precision"], schema.get("scale", 0))
    if logical == "date" and t == "int":
        return pa.date32()
    if logical in TIMESTAMPS and t == "long":
        return pa.timestamp("us", tz=TIMESTAMPS[logical])
    if t == "record":
        return pa.struct([_field(f["name"], f["type"], named) for f in schema["fields"]])
    if t == "array":
        return pa.list_(pa.field("element", arrow_type(schema["items"], named)))  # Spark's name for it
    if t == "map":
        return pa.map_(pa.string(), arrow_type(schema["values"], named))
    if t == "enum":
        return pa.string()
    if t == "fixed":
        return pa.binary()
    return _type(t, named)  # a primitive written as {"type": "long", ...}: its logical type, if any, is ignored


def _union(branches: list, named: dict) -> pa.DataType:
    rest = _non_null(branches)
    kinds = {_resolve(b, named) if isinstance(b, str) else None for b in rest}
    if len(rest) == 2 and kinds == {"int", "long"}:
        return pa.int64()
    if len(rest) == 2 and kinds == {"float", "double"}:
        return pa.float64()
    return pa.struct([pa.field(f"member{i}", arrow_type(b, named)) for i, b in enumerate(rest)])


def fixer(schema, named: dict) -> Fix | None:
    """How to turn fastavro's value of this schema into one pyarrow takes; None when it takes it as it is."""
    schema = _resolve(schema, named)
    if isinstance(schema, list):
        rest = _non_null(schema)
        if len(rest) == 1:
            return fixer(rest[0], named)
        if isinstance(_type(schema, named), pa.StructType):
            return _member_of(rest, named)
        return None
    if isinstance(schema, str):
        return None
    t, logical = schema["type"], schema.get("logicalType")
    if logical == "uuid":
        return lambda v: None if v is None else str(v)
    if logical in ("time-millis", "time-micros"):
        per_second = 1000 if logical == "time-millis" else 1_000_000
        return lambda v: None if v is None else _since_midnight(v, per_second)
    if t == "record":
        fixes = {f["name"]: fixer(f["type"], named) for f in schema["fields"]}
        fixes = {k: f for k, f in fixes.items() if f is not None}
        return (lambda v: None if v is None else {**v, **{k: f(v.get(k)) for k, f in fixes.items()}}) if fixes else None
    if t == "array":
        item = fixer(schema["items"], named)
        return (lambda v: None if v is None else [item(x) for x in v]) if item else None
    if t == "map":
        value = fixer(schema["values"], named)
        return (lambda v: None if v is None else {k: value(x) for k, x in v.items()}) if value else None
    return None


def _member_of(branches: list, named: dict) -> Fix:
    """A value of a union of several types -> {"memberN": value} for the branch it belongs to."""
    from fastavro.validation import validate  # here: fastavro loads only where Avro is read
    fixes = [fixer(b, named) for b in branches]

    def fix(v):
        if v is None:
            return None
        for i, b in enumerate(branches):
            if validate(v, b, raise_errors=False):
                return {f"member{i}": fixes[i](v) if fixes[i] else v}
        raise ValueError(f"an Avro union value {v!r} fits none of its branches")
    return fix


def _since_midnight(t: dt.time, per_second: int) -> int:
    seconds = t.hour * 3600 + t.minute * 60 + t.second
    return seconds * per_second + t.microsecond * per_second // 1_000_000


def _self_reference(schema, enclosing: tuple = ()) -> str | None:
    """The name of a record found inside itself, if any."""
    if isinstance(schema, str):
        return schema if schema in enclosing else None
    if isinstance(schema, list):
        return next(filter(None, (_self_reference(b, enclosing) for b in schema)), None)
    t = schema.get("type")
    if isinstance(t, (dict, list)):
        return _self_reference(t, enclosing)
    if t == "record":
        inner = enclosing + (schema.get("name"),)
        return next(filter(None, (_self_reference(f["type"], inner) for f in schema["fields"])), None)
    return _self_reference(schema["items"] if t == "array" else schema["values"], enclosing) \
        if t in ("array", "map") else None


def _non_null(branches: list) -> list:
    return [b for b in branches if b != "null"]


def _resolve(schema, named: dict):
    """A named type's reference -> its definition; anything else as it is."""
    if isinstance(schema, str) and schema in named:
        return named[schema]
    if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
        return schema["type"]
    return schema


def _remember(schema: dict, named: dict) -> None:
    if schema.get("type") in ("record", "enum", "fixed") and "name" in schema:
        named.setdefault(schema["name"], schema)


def _type_name(schema) -> str:
    return schema if isinstance(schema, str) else schema.get("type", "?") if isinstance(schema, dict) else "a union"
