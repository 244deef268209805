"""The CSV reader end to end without Spark: which path a file takes, the header's unknown columns, the
rescued column, the modes' counts and reasons, and the types CSV cannot hold."""
import json

import pyarrow as pa
import pytest

from s3sqs.reading.formats import FormatOptions, MalformedFile
from s3sqs.reading.formats import csv as reader
from s3sqs.reading.formats.csv import fast as csv_fast

FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string())]


def read(data: bytes, fields=FIELDS, mode="PERMISSIVE", rescued=None, **opts):
    return reader.read(pa.py_buffer(data), fields, FormatOptions("csv", opts, mode, rescued),
                       type("F", (), {"uri": "s3://b/k.csv"})())


@pytest.fixture
def fast_path(monkeypatch):
    """Records whether pyarrow's path gave the table."""
    taken = []
    original = csv_fast.read

    def spy(*a, **k):
        table = original(*a, **k)
        taken.append(table is not None)
        return table
    monkeypatch.setattr(csv_fast, "read", spy)
    return taken


@pytest.mark.parametrize("data", [b"id,name\n1,a\n2,\"b, c\"\n", b"\xef\xbb\xbfid,name\r\n1,a\r\n", b"id,name\n",
                                  b'"id","name"\n1,"a"', b'id,name\n1,x\n2,""'])
def test_good_files_take_pyarrow(fast_path, data):
    rows = read(data, header=True)
    assert fast_path == [True] and rows.malformed == 0


@pytest.mark.parametrize("data,why", [
    (b'id,name\n1,"a""b"\n', "a doubled quote"),
    (b'id,name\n1,"a\\"b"\n', "an escaped quote"),
    (b'id,name\n1,"a\nb"\n', "a quoted line break"),
    (b'id,name\n1,"a" \n', "space after a closing quote"),
    (b'id,name\n1,"a"b', "text after a closing quote, at the end of the file"),
    (b'id,name\n1, "a"\n', "space before an opening quote"),
    (b"id,name\n0x10,a\n", "a hexadecimal integer"),
    (b"id,name\n1,a\n0X1f,b\n", "a hexadecimal integer in capitals"),
    (b"id,name\n+1,a\n", "a sign pyarrow refuses"),
    (b"id,name\n1\n", "a short row"),
    (b"id,name\n1,\xe9\n", "bytes that are not UTF-8"),
])
def test_files_pyarrow_would_read_otherwise_go_the_python_way(fast_path, data, why):
    read(data, header=True)
    assert fast_path == [False], why


def test_values_pyarrow_reads_otherwise_send_the_file_the_python_way(fast_path):
    rows = read(b"1,nan\n2,1.5\n", [pa.field("id", pa.int64()), pa.field("x", pa.float64())])
    assert fast_path == [False] and rows.table.column("x").to_pylist() == [None, 1.5] and rows.malformed == 1


def test_options_pyarrow_cannot_do_skip_it(fast_path):
    read(b"#x\n1,a\n", comment="#")
    read(b" 1 , a \n", ignoreLeadingWhiteSpace=True)
    read(b"1,a;2,b", lineSep=";")
    assert fast_path == []


def test_whitespace_separators_and_line_separators_reach_the_reader():
    # (config/format_options.py drops these values today: see the parity test's xfail)
    assert read(b"1\ta\n\t\n2\tb\n", sep="\t").table.to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert read(b"1,a\rb\n2,b\n", lineSep="\n").table.column("name").to_pylist() == ["a\rb", "b"]


def test_header_names_the_schema_lacks_are_unknown_and_their_values_rescued():
    rows = read(b"id,name,extra\n1,a,x\n2,b\n", header=True, rescued="_rescued")
    assert rows.unknown == ("extra",)
    assert rows.malformed == 1  # Spark: a row with more (or fewer) values than the schema is malformed
    got = rows.table.to_pylist()
    assert [(r["id"], r["name"]) for r in got] == [(1, "a"), (2, "b")]
    assert json.loads(got[0]["_rescued"]) == {"extra": "x", "_file_path": "s3://b/k.csv"}
    assert got[1]["_rescued"] is None
    assert rows.reason == "row 1: 3 values where the schema has 2 columns"


def test_values_that_do_not_fit_are_rescued_by_column():
    rows = read(b"x,a\n2,b\n", rescued="_rescued")
    first = rows.table.to_pylist()[0]
    assert first["id"] is None and json.loads(first["_rescued"]) == {"id": "x", "_file_path": "s3://b/k.csv"}
    assert rows.malformed == 1 and rows.reason == "row 1: column 'id' value 'x' is not int64"


def test_columns_map_by_position_even_with_a_header():
    assert read(b"name,id\n1,a\n", header=True).table.to_pylist() == [{"id": 1, "name": "a"}]


def test_modes():
    data = b"1,a\nx,b\n3\n4,d\n"
    dropped = read(data, mode="DROPMALFORMED")
    assert dropped.table.column("id").to_pylist() == [1, 4] and (dropped.malformed, dropped.dropped) == (2, 2)
    with pytest.raises(MalformedFile, match="row 2: column 'id' value 'x'"):
        read(data, mode="FAILFAST")


def test_nested_columns_are_refused_by_name():
    with pytest.raises(MalformedFile, match="CSV has no nested types: column 'tags'"):
        read(b"1,a\n", FIELDS + [pa.field("tags", pa.list_(pa.string()))])


def test_infer_names_and_types():
    fo = FormatOptions("csv", {"header": True})
    schema = reader.infer(pa.py_buffer(b"a,a,,b\n1,3000000000,x,2020-01-15\n2,1.5,,2020-01-15 10:00\n"), fo, True)
    assert [(f.name, str(f.type)) for f in schema] == [
        ("a0", "int32"), ("a1", "double"), ("_c2", "string"), ("b", "timestamp[us, tz=UTC]")]
    assert reader.infer(pa.py_buffer(b"1,2\n"), FormatOptions("csv"), False).names == ["_c0", "_c1"]
