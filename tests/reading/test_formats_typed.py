"""The ORC, Avro, text and binaryFile readers on their own (no Spark): splitting, limits, the Avro type mapping
Spark documents, and the clear error a file of another format gets."""
from __future__ import annotations

import datetime as dt
import gzip
import io
import uuid

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from s3sqs.config.format_options import reader_options
from s3sqs.core.files import S3File
from s3sqs.reading.formats import FormatOptions, MalformedFile, reader_of
from s3sqs.reading.formats.avro.schema import arrow_schema
from s3sqs.reading.formats.common.typed_schema import unknown_fields

CSV = b"id,name\n1,a\n2,b\n"


def text_values(data: bytes, **options) -> list[bytes]:
    table = reader_of("text").read(pa.py_buffer(data), [pa.field("value", pa.string())],
                                   FormatOptions("text", options)).table
    assert table.schema == pa.schema([pa.field("value", pa.string())])
    return table.column("value").cast(pa.binary()).to_pylist()


@pytest.mark.parametrize("data,options,expected", [
    (b"a\nb\n", {}, [b"a", b"b"]),                     # a final newline opens no row
    (b"a\n\nb", {}, [b"a", b"", b"b"]),                # an empty line between is a row
    (b"\n", {}, [b""]),
    (b"a\r\nb\rc\n\r\n", {}, [b"a", b"b", b"c", b""]),  # \r\n, \r and \n all end a line (the slow path)
    (b"a|b||", {"lineSep": "|"}, [b"a", b"b", b""]),
    (b"a\r\nb\rc\n\r\n", {"lineSep": "\r\n"}, [b"a", b"b\rc\n"]),
    (b"a\r\nb", {"lineSep": "\n"}, [b"a\r", b"b"]),    # exactly the separator given, nothing else
    (b"a\nb\n", {"wholetext": True}, [b"a\nb\n"]),
    (b"", {}, []),
    ("ü\xff".encode() + b"\xff\n", {}, ["ü\xff".encode() + b"\xff"]),  # bytes kept as they are, as Spark
], ids=["lf", "empty-line", "only-newline", "mixed", "pipe", "crlf-sep", "lf-sep", "whole", "empty", "bytes"])
def test_text_splits_lines_as_hadoop_s_line_reader(data, options, expected):
    assert text_values(data, **options) == expected


def test_text_infers_one_string_column_and_decompresses_by_extension():
    assert reader_of("text").infer(pa.py_buffer(b"1\n2\n"), FormatOptions("text"), True) == pa.schema(
        [pa.field("value", pa.string())])
    assert reader_of("text").COMPRESSION == "detect" and reader_of("binaryFile").COMPRESSION is None


def test_whitespace_reader_options_are_values_not_blanks():
    assert reader_options("text", {"lineSep": "\r\n"})["lineSep"] == "\r\n"
    assert reader_options("text", {"lineSep": "\n"})["lineSep"] == "\n"
    assert reader_options("csv", {"sep": "\t"})["sep"] == "\t"
    assert reader_options("text", {"lineSep": ""})["lineSep"] is None  # empty: not given


# ------------------------------------------------------------------------------------------ binaryFile

BINARY_FIELDS = [pa.field("path", pa.string()), pa.field("modificationTime", pa.timestamp("us", tz="UTC")),
                 pa.field("length", pa.int64()), pa.field("content", pa.binary())]


def binary_rows(data: bytes, file: S3File, fields=BINARY_FIELDS, **options):
    return reader_of("binaryFile").read(pa.BufferReader(pa.py_buffer(data)), fields,
                                        FormatOptions("binaryFile", options), file).table.to_pylist()


def test_binary_file_row_describes_the_s3_object_with_its_event_time_and_raw_bytes():
    packed = gzip.compress(b"hello")
    f = S3File("bucket", "in/a b.gz", len(packed), event_ms=1_700_000_000_123)
    assert binary_rows(packed, f) == [{"path": "s3://bucket/in/a b.gz",
                                       "modificationTime": dt.datetime(2023, 11, 14, 22, 13, 20, 123000, dt.timezone.utc),
                                       "length": len(packed), "content": packed}]


def test_binary_file_local_path_is_hadoop_s_form_and_content_is_read_only_when_declared(tmp_path):
    p = tmp_path / "x.bin"
    p.write_bytes(b"abc")
    f = S3File("", str(p).lstrip("/"), 3, scheme="file")  # no event time: the local mtime
    rows = binary_rows(b"abc", f, BINARY_FIELDS[:3])
    assert rows[0]["path"] == f"file:{p}" and rows[0]["length"] == 3 and "content" not in rows[0]
    assert rows[0]["modificationTime"].timestamp() == pytest.approx(p.stat().st_mtime, abs=0.001)
    assert len(binary_rows(b"abc", f, [pa.field("other", pa.int32())])) == 1  # still one row for the file


def test_binary_file_over_the_limit_names_its_size_the_limit_and_the_option():
    f = S3File("bucket", "big.bin", 2048, event_ms=1)
    with pytest.raises(MalformedFile, match=r"s3://bucket/big.bin is 2048 bytes, over the maxFileSize limit of "
                                            r"1024 bytes; raise the option maxFileSize"):
        binary_rows(b"x" * 2048, f, maxFileSize=1024)
    assert binary_rows(b"x" * 1024, f, maxFileSize=1024)[0]["length"] == 1024


# ------------------------------------------------------------------------------------------------- ORC

def orc_bytes(table: pa.Table) -> pa.BufferReader:
    out = io.BytesIO()
    orc.write_table(table, out)
    return pa.BufferReader(pa.py_buffer(out.getvalue()))


def test_orc_reads_only_declared_columns_and_names_the_fields_the_schema_lacks():
    table = pa.table({"id": [1, 2, 3], "extra": ["x", "y", "z"],
                      "s": pa.array([{"a": 1, "b": 2}] * 3, pa.struct([("a", pa.int64()), ("b", pa.int64())]))})
    fields = [pa.field("id", pa.int64()), pa.field("s", pa.struct([("a", pa.int64())])), pa.field("gone", pa.int8())]
    rows = reader_of("orc").read(orc_bytes(table), fields, FormatOptions("orc"))
    assert rows.table.column_names == ["id", "s"] and rows.unknown == ("extra", "s.b")
    none = reader_of("orc").read(orc_bytes(table), [pa.field("gone", pa.int8())], FormatOptions("orc"))
    assert none.table.num_rows == 3  # rows of nulls, one per row of the file


def test_orc_infer_gives_spark_s_types():
    table = pa.table({"ts": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("ns")), "xs": [[1]]})
    schema = reader_of("orc").infer(orc_bytes(table), FormatOptions("orc"))
    assert schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert schema.field("xs").type == pa.list_(pa.field("element", pa.int64()))


@pytest.mark.parametrize("fmt,source,message", [
    ("orc", pa.BufferReader(pa.py_buffer(CSV)), r"not an ORC file .*check the option fileFormat \(orc\)"),
    ("avro", pa.py_buffer(CSV), r"not an Avro file .*check the option fileFormat \(avro\)"),
])
def test_a_file_of_another_format_raises_naming_the_format_and_the_option(fmt, source, message):
    with pytest.raises(MalformedFile, match=message):
        reader_of(fmt).read(source, [pa.field("id", pa.int64())], FormatOptions(fmt))


# ------------------------------------------------------------------------------------------------ Avro

def avro_bytes(schema: dict, records: list[dict], codec: str = "null") -> pa.Buffer:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec)
    return pa.py_buffer(out.getvalue())


def record(*fields, name: str = "R") -> dict:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def test_avro_types_map_as_spark_documents_them():
    schema = arrow_schema(fastavro.parse_schema(record(
        ("b", "boolean"), ("i", "int"), ("l", "long"), ("f", "float"), ("d", "double"), ("s", "string"),
        ("y", "bytes"), ("e", {"type": "enum", "name": "E", "symbols": ["A"]}),
        ("x", {"type": "fixed", "name": "X", "size": 2}),
        ("day", {"type": "int", "logicalType": "date"}),
        ("tm", {"type": "long", "logicalType": "timestamp-millis"}),
        ("tu", {"type": "long", "logicalType": "timestamp-micros"}),
        ("lt", {"type": "long", "logicalType": "local-timestamp-millis"}),
        ("dec", {"type": "bytes", "logicalType": "decimal", "precision": 7, "scale": 3}),
        ("u", {"type": "string", "logicalType": "uuid"}), ("t", {"type": "int", "logicalType": "time-millis"}),
        ("n", ["null", "string"]), ("il", ["int", "long"]), ("fd", ["null", "float", "double"]),
        ("multi", ["null", "int", "string"]), ("m", {"type": "map", "values": "int"}),
        ("a", {"type": "array", "items": "E"}))))
    assert [(f.name, f.type) for f in schema] == [
        ("b", pa.bool_()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()), ("d", pa.float64()),
        ("s", pa.string()), ("y", pa.binary()), ("e", pa.string()), ("x", pa.binary()), ("day", pa.date32()),
        ("tm", pa.timestamp("us", "UTC")), ("tu", pa.timestamp("us", "UTC")), ("lt", pa.timestamp("us")),
        ("dec", pa.decimal128(7, 3)), ("u", pa.string()), ("t", pa.int32()), ("n", pa.string()),
        ("il", pa.int64()), ("fd", pa.float64()),
        ("multi", pa.struct([("member0", pa.int32()), ("member1", pa.string())])),
        ("m", pa.map_(pa.string(), pa.int32())), ("a", pa.list_(pa.field("element", pa.string())))]
    assert all(f.nullable for f in schema)


def test_avro_values_need_only_a_few_conversions():
    schema = record(("u", {"type": "string", "logicalType": "uuid"}), ("t", {"type": "int", "logicalType": "time-millis"}),
                    ("multi", ["null", "int", "string"]), ("nested", {"type": "map", "values": {
                        "type": "array", "items": {"type": "string", "logicalType": "uuid"}}}))
    data = avro_bytes(schema, [{"u": uuid.UUID(int=1), "t": dt.time(0, 0, 1, 500000), "multi": "s",
                                "nested": {"k": [uuid.UUID(int=2)]}},
                               {"u": uuid.UUID(int=3), "t": dt.time(0), "multi": 4, "nested": {}}], codec="deflate")
    fields = list(reader_of("avro").infer(data, FormatOptions("avro")))
    rows = reader_of("avro").read(data, fields, FormatOptions("avro")).table.to_pylist()
    assert rows == [{"u": str(uuid.UUID(int=1)), "t": 1500, "multi": {"member0": None, "member1": "s"},
                     "nested": [("k", [str(uuid.UUID(int=2))])]},
                    {"u": str(uuid.UUID(int=3)), "t": 0, "multi": {"member0": 4, "member1": None}, "nested": []}]


def test_avro_reads_declared_columns_and_names_unknown_ones():
    data = avro_bytes(record(("id", "long"), ("s", record(("a", "int"), ("b", "int"), name="S")), ("extra", "string")),
                      [{"id": 1, "s": {"a": 1, "b": 2}, "extra": "x"}])
    fields = [pa.field("id", pa.int64()), pa.field("s", pa.struct([("a", pa.int32())]))]
    rows = reader_of("avro").read(data, fields, FormatOptions("avro"))
    assert rows.table.column_names == ["id", "s"] and rows.unknown == ("s.b", "extra")
    assert unknown_fields(pa.schema(fields), fields) == ()


@pytest.mark.parametrize("schema,records,message", [
    ("long", [1], "not a record"),
    (record(("d", {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 0})), [], "more than 38"),
])
def test_avro_files_spark_cannot_read_either_are_refused(schema, records, message):
    data = avro_bytes(schema, records)
    with pytest.raises(MalformedFile, match=message):
        reader_of("avro").read(data, [pa.field("d", pa.int64())], FormatOptions("avro"))


def test_a_truncated_avro_file_is_a_damaged_file():
    data = avro_bytes(record(("s", "string")), [{"s": "x" * 100}] * 50).to_pybytes()
    with pytest.raises(MalformedFile, match="Avro"):
        reader_of("avro").read(pa.py_buffer(data[: len(data) - 40]), [pa.field("s", pa.string())],
                               FormatOptions("avro"))


# ------------------------------------------------------------------------------------ rescued data

@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_rescued_column_holds_misfits_and_undeclared_fields_with_the_file_path(fmt):
    if fmt == "orc":
        source = orc_bytes(pa.table({"id": ["1", "x", None], "extra": [None, "e", "f"]}))
    else:
        source = avro_bytes(record(("id", ["null", "string"]), ("extra", ["null", "string"])),
                            [{"id": "1", "extra": None}, {"id": "x", "extra": "e"}, {"id": None, "extra": "f"}])
    f = S3File("bucket", "k.bin", 1)
    fields = [pa.field("id", pa.int64())]
    rows = reader_of(fmt).read(source, fields, FormatOptions(fmt, {}, rescued_column="_rescued"), f)
    assert rows.table.column("id").to_pylist() == [1, None, None]
    assert rows.table.column("_rescued").to_pylist() == [
        None, '{"id":"x","extra":"e","_file_path":"s3://bucket/k.bin"}', '{"extra":"f","_file_path":"s3://bucket/k.bin"}']
    assert rows.malformed == 1 and "column id" in rows.reason and rows.unknown == ("extra",)
    plain = reader_of(fmt).read(source, fields, FormatOptions(fmt), f)  # no rescued column: conform casts
    assert plain.table.column_names == ["id"] and plain.malformed == 0


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_names_that_differ_only_by_case_match_as_in_spark(fmt):
    if fmt == "orc":
        source = orc_bytes(pa.table({"Id": [1], "S": pa.array([{"A": 1, "b": [{"X": 2}]}], pa.struct(
            [("A", pa.int64()), ("b", pa.list_(pa.struct([("X", pa.int64())])))]))}))
    else:
        item = {"type": "record", "name": "I", "fields": [{"name": "X", "type": "long"}]}
        source = avro_bytes(record(("Id", "long"), ("S", record(("A", "long"), ("b", {"type": "array", "items": item}),
                                                                name="S"))), [{"Id": 1, "S": {"A": 1, "b": [{"X": 2}]}}])
    fields = [pa.field("id", pa.int64()),
              pa.field("s", pa.struct([("a", pa.int64()), ("b", pa.list_(pa.struct([("x", pa.int64())])))]))]
    rows = reader_of(fmt).read(source, fields, FormatOptions(fmt))
    assert rows.table.to_pylist() == [{"id": 1, "s": {"a": 1, "b": [{"x": 2}]}}] and rows.unknown == ()
