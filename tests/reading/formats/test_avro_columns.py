"""Avro decoded a column at a time (polars) gives exactly the rows fastavro's records give, for every schema
it takes; the schemas it would read otherwise than Spark go to fastavro; a block polars refuses is decoded
by fastavro, with a warning."""
from __future__ import annotations

import datetime as dt
import decimal
import io
import logging
import random
import uuid

import fastavro
import pyarrow as pa
import pytest
from fastavro.schema import expand_schema

from s3sqs.core.files import S3File
from s3sqs.reading.formats import FormatOptions, MalformedFile, reader_of
from s3sqs.reading.formats.avro import columnar as avro_columns
from s3sqs.reading.formats.avro import reader as avro_reader

UTC = dt.timezone.utc
STATE = {"type": "enum", "name": "State", "symbols": ["NEW", "PAID", "GONE"]}
HASH = {"type": "fixed", "name": "H4", "size": 4}
LINE = {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"},
                                                      {"name": "n", "type": ["null", "int"]}]}
SCHEMA = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "Id", "type": "long"},
    {"name": "qty", "type": ["null", "int"]},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": ["double", "null"]},
    {"name": "ok", "type": ["null", "boolean"]},
    {"name": "name", "type": ["null", "string"]},
    {"name": "raw", "type": "bytes"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "fprice", "type": ["null", {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                                         "precision": 12, "scale": 3}]},
    {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "local_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "state", "type": STATE},
    {"name": "hash", "type": HASH},
    {"name": "hashes", "type": {"type": "array", "items": "H4"}},  # a named type used again, by name
    {"name": "customer", "type": ["null", {"type": "record", "name": "Customer", "fields": [
        {"name": "cid", "type": "int"}, {"name": "emails", "type": {"type": "array", "items": "string"}},
        {"name": "tier", "type": ["null", "string"]}]}]},
    {"name": "lines", "type": {"type": "array", "items": LINE}},
]}


def order(i: int, rnd: random.Random) -> dict:
    def maybe(v):
        return None if rnd.random() < 0.2 else v
    return {"Id": rnd.randint(-2**63, 2**63 - 1), "qty": maybe(rnd.randint(-2**31, 2**31 - 1)),
            "ratio": rnd.choice([0.5, -1e30, float("inf"), float("nan")]), "score": maybe(rnd.uniform(-1e9, 1e9)),
            "ok": maybe(rnd.random() < 0.5), "name": maybe(rnd.choice(["", "grüße", "名前", "a\x00b", f"n{i}"])),
            "raw": rnd.randbytes(rnd.randint(0, 5)),
            "price": decimal.Decimal(rnd.randint(-10**10 + 1, 10**10 - 1)).scaleb(-2),
            "fprice": maybe(decimal.Decimal(rnd.randint(-10**12 + 1, 10**12 - 1)).scaleb(-3)),
            "day": maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rnd.randint(0, 80_000))),
            "at_ms": dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=rnd.randint(0, 4 * 10**12)),
            "at_us": maybe(dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=rnd.randint(0, 4 * 10**15))),
            "local_ms": dt.datetime(2024, 1, 2, 3, 4, 5, rnd.randint(0, 999) * 1000),
            "local_us": dt.datetime(1969, 12, 31, 23, 59, 59, rnd.randint(0, 999_999)),
            "ref": uuid.UUID(int=rnd.getrandbits(128)), "state": rnd.choice(STATE["symbols"]),
            "hash": rnd.randbytes(4), "hashes": [rnd.randbytes(4) for _ in range(rnd.randint(0, 2))],
            "customer": maybe({"cid": i, "emails": [f"{j}@x" for j in range(rnd.randint(0, 3))],
                               "tier": maybe(rnd.choice(STATE["symbols"]))}),
            "lines": [{"sku": f"s{j}", "n": maybe(j)} for j in range(rnd.randint(0, 3))]}


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values, NaN equal to NaN (Table.equals holds NaN unequal to itself)."""
    def canonical(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, dict):
            return {k: canonical(x) for k, x in v.items()}
        return [canonical(x) for x in v] if isinstance(v, list) else v
    return a.schema == b.schema and canonical(a.to_pylist()) == canonical(b.to_pylist())


def avro_file(schema: dict, records, codec: str = "deflate", sync_interval: int = 4000) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, sync_interval=sync_interval)
    return out.getvalue()


@pytest.fixture
def calls(monkeypatch) -> list:
    """Each call of the columnar decoder, with what it returned (None: it refused)."""
    seen, decode = [], avro_columns.decode

    def spy(*args):
        seen.append(decode(*args))
        return seen[-1]
    monkeypatch.setattr(avro_columns, "decode", spy)
    return seen


def by_records(monkeypatch, *read):
    with monkeypatch.context() as m:
        m.setattr(avro_columns, "decodes_as_spark", lambda expanded: False)
        return reader_of("avro").read(*read)


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard"])
@pytest.mark.parametrize("declared", ["all", "some", "none"])
def test_columns_give_exactly_the_rows_records_give(codec, declared, calls, monkeypatch):
    rnd = random.Random(f"{codec}{declared}")
    data = pa.py_buffer(avro_file(SCHEMA, [order(i, rnd) for i in range(2000)], codec))
    schema = reader_of("avro").infer(data, FormatOptions("avro"))
    fields = {"all": list(schema), "some": [pa.field("id", pa.int64()), pa.field("lines", schema.field("lines").type),
                                            pa.field("absent", pa.string())], "none": [pa.field("x", pa.int32())]}[declared]
    ours = reader_of("avro").read(data, fields, FormatOptions("avro"))
    theirs = by_records(monkeypatch, data, fields, FormatOptions("avro"))
    assert ours.table.num_rows == 2000 and same(ours.table, theirs.table)
    assert ours.unknown == theirs.unknown
    assert [c is not None for c in calls] == ([] if declared == "none" else [True])  # polars decoded them


def test_with_a_rescued_column_the_misfits_are_the_same(calls, monkeypatch):
    rnd = random.Random(7)
    data = pa.py_buffer(avro_file(SCHEMA, [order(i, rnd) for i in range(500)]))
    fields = [pa.field("id", pa.int32()), pa.field("name", pa.int64()), pa.field("day", pa.date32())]
    fo = FormatOptions("avro", {}, "PERMISSIVE", "_rescued")
    f = S3File("bucket", "k.avro", len(data))
    ours, theirs = reader_of("avro").read(data, fields, fo, f), by_records(monkeypatch, data, fields, fo, f)
    assert same(ours.table, theirs.table) and ours.malformed == theirs.malformed > 0
    assert calls and all(c is not None for c in calls)


def test_a_big_file_in_parts_gives_the_same_rows(calls, monkeypatch):
    rnd = random.Random(3)
    data = avro_file(SCHEMA, [order(i, rnd) for i in range(3000)], sync_interval=2000)
    fields = list(reader_of("avro").infer(pa.py_buffer(data), FormatOptions("avro")))
    monkeypatch.setattr(avro_reader, "PART_BYTES", 50_000)
    parts = list(reader_of("avro").read_parts(io.BytesIO(data), fields, FormatOptions("avro")))
    whole = by_records(monkeypatch, pa.py_buffer(data), fields, FormatOptions("avro"))
    assert len(parts) > 3 and all(c is not None for c in calls)
    assert len(calls) == sum(p.table.num_rows >= avro_reader.COLUMNAR_RECORDS for p in parts) >= len(parts) - 1
    assert same(pa.concat_tables([p.table for p in parts]), whole.table)


def test_a_few_records_are_decoded_by_fastavro_which_is_quicker_there(calls, monkeypatch):
    rnd = random.Random(9)
    few = pa.py_buffer(avro_file(SCHEMA, [order(i, rnd) for i in range(avro_reader.COLUMNAR_RECORDS - 1)]))
    fields = [pa.field("id", pa.int64()), pa.field("ref", pa.string())]
    assert same(reader_of("avro").read(few, fields, FormatOptions("avro")).table,
                by_records(monkeypatch, few, fields, FormatOptions("avro")).table)
    assert calls == []
    enough = pa.py_buffer(avro_file(SCHEMA, [order(i, rnd) for i in range(avro_reader.COLUMNAR_RECORDS)]))
    assert reader_of("avro").read(enough, fields, FormatOptions("avro")).table.num_rows == avro_reader.COLUMNAR_RECORDS
    assert len(calls) == 1 and calls[0] is not None


@pytest.mark.parametrize("field_type", [
    {"type": "map", "values": "long"},          # polars has no map type
    ["null", "int", "string"],                  # Spark: STRUCT<member0, member1>
    ["int", "long"],                            # Spark: LONG
    "null",
    {"type": "int", "logicalType": "time-millis"},   # Spark: INT, polars: a time of day
    {"type": "long", "logicalType": "time-micros"},
    {"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"},
    {"type": "array", "items": {"type": "map", "values": "string"}},
    {"type": "record", "name": "Empty", "fields": []},
    {"type": "string", "logicalType": "date"},  # a logical type on a base Spark ignores it on
    ["null", STATE],                            # an enum other than as a top-level field
    {"type": "array", "items": STATE},
    {"type": "record", "name": "W", "fields": [{"name": "s", "type": STATE}]},
])
def test_schemas_polars_reads_otherwise_than_spark_go_to_fastavro(field_type, calls):
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "x", "type": field_type}]}
    assert not avro_columns.decodes_as_spark(expand_schema(fastavro.parse_schema(schema)))
    data = pa.py_buffer(avro_file(schema, []))
    assert reader_of("avro").read(data, [pa.field("id", pa.int64())], FormatOptions("avro")).table.num_rows == 0
    assert calls == []


def test_a_recursive_schema_is_refused_as_spark_refuses_it():
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "x", "type": node}]}
    assert not avro_columns.decodes_as_spark(expand_schema(fastavro.parse_schema(schema)))
    with pytest.raises(MalformedFile, match="the record Node holds itself .* Spark reads no recursive"):
        reader_of("avro").read(pa.py_buffer(avro_file(schema, [])), [pa.field("id", pa.int64())], FormatOptions("avro"))


def test_the_schemas_it_takes():
    assert avro_columns.decodes_as_spark(expand_schema(fastavro.parse_schema(SCHEMA)))


def test_blocks_polars_refuses_are_decoded_by_fastavro_with_a_warning(monkeypatch, caplog):
    rnd = random.Random(5)
    data = pa.py_buffer(avro_file(SCHEMA, [order(i, rnd) for i in range(500)]))
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string())]
    theirs = by_records(monkeypatch, data, fields, FormatOptions("avro"))

    class Refuses:
        @staticmethod
        def read_avro(*a, **k):
            raise OSError("no")
    monkeypatch.setattr(avro_columns, "polars_module", lambda: Refuses)
    with caplog.at_level(logging.WARNING):
        ours = reader_of("avro").read(data, fields, FormatOptions("avro"))
    assert same(ours.table, theirs.table)
    assert "polars could not decode these Avro blocks (OSError: no); decoding them with fastavro" in caplog.text


def test_a_damaged_block_is_still_the_file_s_fault():
    data = avro_file(SCHEMA, [order(i, random.Random(1)) for i in range(500)], codec="null")
    damaged = data[:-100] + b"\xff" * 84 + data[-16:]  # the last block's records garbled, its sync marker kept
    with pytest.raises(MalformedFile, match="Avro"):
        reader_of("avro").read(pa.py_buffer(damaged), [pa.field("name", pa.string())], FormatOptions("avro"))
