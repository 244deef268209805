"""The JSON reader gives the rows Spark's own JSON reader gives: the same files, schema and options through
both (tests/support/parity.py), on the Spark version under test. Malformed rows are compared by their data
columns (Spark's corrupt-record column is not this source's)."""
from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pytest

from s3sqs.reading.formats import FormatOptions, reader_of
from tests.reading.formats.every_row_malformed import assert_set_aside_where_spark_keeps_rows
from tests.support.parity import assert_same_rows, local_file, parity_session, source_rows

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    with parity_session("json") as session:
        yield session


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


NESTED = "\n".join([
    '{"id": 1, "s": {"k": 1, "b": [1, 2.50, "x\\u00e9\\n\\"/", null, true]}, "n": 1.10, "r": [{"a": {"k": 1}, "b": 1}]}',
    '{"id": 2, "s": [ 1 ,2 ], "n": 1e20, "r": [{"a": [1,  2], "b": 2}, {"a": "plain", "b": null}]}',
    '{"id": 3, "s": 12345678901234567890123, "n": true, "r": null, "extra": {"deep": 1}}',
    '{"id": 4, "s": "é ü 😀", "n": -0.0}',
    '{"id": 5}',
    '{"id": 6, "s": null, "n": null, "r": []}',
    '{"id": 7, "s": {"f": 1.0E-7, "g": 123456789.123456789, "big": 1.7976931348623157e309}, "n": "text"}',
])
UNEVEN = "\n".join([
    '{"a": 1, "b": {"x": 1.5, "y": [1, 2], "z": "q"}, "c": true}',
    '{"b": {"y": null, "w": 5}}',
    '{"a": 9223372036854775807, "c": false, "d": "x"}',
    '',
    '   ',
    '{}',
    '{"a": null, "b": null, "c": null}',
])
MALFORMED = "\n".join([
    '{"a": 1, "b": "x", "c": 1.5}',
    '{"a": "not a long", "b": "y", "c": 2}',
    'not json at all',
    '{"a": 4, "b": "z"',
    '[{"a": 6, "b": "p"}, {"a": 7}]',
    '[{"a": 8}, {"a": "bad"}]',
    '123',
    '"just a string"',
    '[]',
    '{"a": 9, "b": "trailing"} garbage',
    '{"a": 10.5, "b": {"k": 1}, "c": "NaN"}',
    '{"a": 99999999999999999999, "c": "Infinity"}',
    '{"a": "", "b": "", "c": ""}',
    '{"a": 11}{"a": 12}',
])
TIMES = "\n".join(json.dumps({"i": i, "t": v, "d": v, "n": v}) for i, v in enumerate([
    "2020-01-01T12:34:56Z", "2020-01-01T12:34:56.123456789Z", "2020-01-01T12:34:56.1+02:00", "2020-01-01 12:34:56",
    "2020-01-01", "2020-01", "2020", "2020-1-2 3:4:5", "2020-01-01T12:34:56+0200", "2020-01-01T12:34:56+02",
    "2020-01-01T12:34:56 UTC", "2020-01-01T12:34:56Europe/Paris", "2020-01-01T12:34:56 America/New_York",
    "2020-01-01T12:34", "2020-01-01T12", " 2020-01-01 ", "2020-01-01T12:34:56GMT+01:00", "2020-01-01T12:34:56UTC+1",
    "2020-02-30", "2020-01-01T24:00:00", "01/02/2020", 1577836800, 1.5, "", "x", "2020-01-01T12:34:56z",
    "2020-01-01t12:34:56", "2020-01-01T12:34:56-00:30", "2020-01-01T12:34:56+1", "2020-01-01T1:2:3",
    "2020-01-01T12:34:56.", "2020-01-01T", "2020-03-29T02:30:00 Europe/Paris", "2020-01-01T12:34Z", "+2020-01-01",
    "2020-01-01T12:34:56 PST", None,
]))
# One column per read: a row's other columns stay as they are (Spark keeps the fields that parse).
TIME_COLUMNS = ["i INT, t TIMESTAMP", "i INT, d DATE", "i INT, n TIMESTAMP_NTZ"]

CASES = [
    # (name, file name, text, schema, options)
    ("nested into STRING and typed columns", "nested.json", NESTED,
     "id BIGINT, s STRING, n STRING, r ARRAY<STRUCT<a: STRING, b: BIGINT>>", {}),
    ("uneven records and nulls", "uneven.json", UNEVEN,
     "a BIGINT, b STRUCT<x: DOUBLE, y: ARRAY<BIGINT>, z: STRING>, c BOOLEAN, d STRING", {}),
    ("map and struct at depth", "maps.json",
     '{"m": {"k1": {"a": 1}, "k2": [1,2], "k3": 3, "k4": "s"}, "s": {"t": {"u": [{"v": {"w": 1}}]}}}\n'
     '{"m": {"x": null}, "s": {"t": {"u": [{"v": 5}, {"v": "s"}]}}}\n',
     "m MAP<STRING, STRING>, s STRUCT<t: STRUCT<u: ARRAY<STRUCT<v: STRING>>>>", {}),
    ("numbers: ints, decimals, floats", "numbers.json",
     '{"l": 1, "i": 2147483648, "d": 1.005, "f": 1.1, "x": 1e400, "s": 300}\n'
     '{"l": -9223372036854775808, "i": -2147483648, "d": 123456.789, "f": 3.4028235e38, "x": -1, "s": 32767}\n'
     '{"l": 1.0, "i": 1e2, "d": "1.5", "f": "NaN", "x": 12345678901234567890, "s": -1}\n'
     '{"l": 7, "i": 7, "d": 999.994, "f": 1, "x": "-INF", "s": 1}\n'
     '{"l": 8, "i": 8, "d": 999.995, "f": 2, "x": 0.1, "s": 2}\n',
     "l BIGINT, i INT, d DECIMAL(5,2), f FLOAT, x DOUBLE, s SMALLINT", {}),
    ("booleans and binary", "bools.json",
     '{"b": true, "y": "aGVsbG8="}\n{"b": "true", "y": "!!"}\n{"b": 1, "y": 5}\n{"b": false, "y": null}\n',
     "b BOOLEAN, y BINARY", {}),
    ("field names are case-sensitive", "case.json", '{"A": 1, "b": 2}\n{"a": 3, "B": 4}\n', "a BIGINT, b BIGINT", {}),
    ("duplicate keys: the last that fits wins", "quirks.json",
     '{"a": 1, "a": 2}\n{"a": 1, "a": "x"}\n{"a": "x", "a": 3}\n', "a BIGINT", {}),
    ("custom timestampFormat and dateFormat", "custom.json",
     '{"t": "2020/01/02 03:04:05.12 +0100", "d": "02.01.2020"}\n{"t": "2020/1/02 03:04:05 +0100", "d": "2.1.2020"}\n'
     '{"t": "2021/12/31 23:59:59 -0830", "d": "31.12.2021"}\n{"t": "2020-01-02T03:04:05Z", "d": "2020-01-02"}\n',
     "t TIMESTAMP, d DATE", {"timestampFormat": "yyyy/MM/dd HH:mm:ss[.SSS] Z", "dateFormat": "dd.MM.yyyy"}),
    ("named months and 12-hour clock", "months.json",
     '{"t": "Jan 02 2020 03:04:05 PM"}\n{"t": "dec 31 2021 12:00:00 am"}\n{"t": "Foo 01 2020 01:00:00 AM"}\n',
     "t TIMESTAMP", {"timestampFormat": "MMM dd yyyy hh:mm:ss a"}),
    ("multiLine: one pretty document", "one.json",
     '{\n  "id": 1,\n  "s": {\n    "k": [1, 2],\n    "t": "x"\n  },\n  "n": 2.50\n}\n', "id BIGINT, s STRING, n STRING",
     {"multiLine": "true"}),
    ("multiLine: a top-level array", "many.json",
     '[\n {"id": 1, "s": {"k": 1}},\n {"id": 2, "s": [1, 2]},\n {"id": 3}\n]\n', "id BIGINT, s STRING",
     {"multiLine": "true"}),
    ("multiLine: CloudTrail Records", "trail.json",
     json.dumps({"Records": [{"eventName": "PutObject", "requestParameters": {"bucketName": "b", "key": "k"},
                              "eventTime": "2026-11-01T12:00:00Z", "resources": [{"ARN": "arn:aws:s3:::b"}]},
                             {"eventName": "GetObject", "requestParameters": None,
                              "eventTime": "2026-11-01T12:00:01Z", "additionalEventData": {"x": 1}}]}, indent=2),
     "Records ARRAY<STRUCT<eventName: STRING, eventTime: TIMESTAMP, requestParameters: STRING, "
     "resources: ARRAY<STRUCT<ARN: STRING>>, additionalEventData: STRING>>", {"multiLine": "true"}),
    ("multiLine: a bad element", "bad_many.json", '[{"a": 1, "b": 2},\n{"a": 3, "b": "x"}]\n',
     "a BIGINT, b BIGINT", {"multiLine": "true"}),
    ("multiLine: only the first document", "two_docs.json", '{"a": 1}\n{"a": 2}\n', "a BIGINT",
     {"multiLine": "true"}),
    ("gzip", "rows.json.gz", NESTED, "id BIGINT, s STRING, n STRING", {}),
    ("lineSep", "sep.json", '{"a": 1}|{"a": 2, "b": {"c": 1}}|{"a": 3}', "a BIGINT, b STRING", {"lineSep": "|"}),
    ("CRLF and CR line ends", "crlf.json", '{"a": 1}\r\n{"a": 2}\r{"a": 3}\n', "a BIGINT", {}),
    ("latin-1 encoding", "latin.json", None, "a STRING, b BIGINT", {"encoding": "ISO-8859-1", "lineSep": "\n"}),
    ("a plain good file", "good.json", "\n".join(json.dumps({"id": i, "user": f"u{i}", "amount": i / 7,
                                                             "ts": f"2026-11-{1 + i % 28:02d}T12:00:00Z"})
                                                 for i in range(200)), "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP", {}),
]


# A case whose every row is malformed (one document, in which one element's misfit marks them all): Spark
# commits its rows, this source quarantines the file (docs/formats.md, "Every row malformed"), and gives
# Spark's rows, value for value, once the rescued-data column is declared.
EVERY_ROW_MALFORMED = ("multiLine: a bad element",)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_rows_as_spark(spark, tmp_path, case):
    case_name, name, text, ddl, options = case
    if text is None:
        path = tmp_path / name
        path.write_bytes('{"a": "caf\u00e9", "b": 1}\n'.encode("latin-1"))
    else:
        path = write(tmp_path, name, text)
    same = assert_set_aside_where_spark_keeps_rows if case_name in EVERY_ROW_MALFORMED else assert_same_rows
    rows = same(spark, "json", [path], ddl, options)
    assert rows, "the case must read some rows"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_rows_as_spark_read_in_blocks(spark, tmp_path, monkeypatch, case):
    """Every file read in blocks of a few bytes of whole lines (a multiLine file whole) gives them too."""
    from s3sqs.reading import blocks
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 16)
    test_same_rows_as_spark(spark, tmp_path, case)


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED"])
def test_malformed_rows_in_each_mode(spark, tmp_path, mode):
    path = write(tmp_path, "bad.json", MALFORMED)
    rows = assert_same_rows(spark, "json", [path], "a BIGINT, b STRING, c DOUBLE", {"mode": mode})
    assert len(rows) == (15 if mode == "PERMISSIVE" else 5)


def test_failfast_fails_in_both(spark, tmp_path):
    from s3sqs.reading.formats import MalformedFile
    path = write(tmp_path, "bad.json", MALFORMED)
    with pytest.raises(Exception, match="MALFORMED_RECORD|FAILFAST"):
        spark.read.schema("a BIGINT, b STRING").option("mode", "FAILFAST").json(str(path)).collect()
    with pytest.raises(MalformedFile, match="FAILFAST"):
        reader_of("json").read(pa.py_buffer(path.read_bytes()), [pa.field("a", pa.int64()), pa.field("b", pa.string())],
                               FormatOptions("json", {}, "FAILFAST"))


@pytest.mark.parametrize("ddl", TIME_COLUMNS)
def test_timestamps_and_dates_default_parsing(spark, tmp_path, ddl):
    path = write(tmp_path, "times.json", TIMES)
    assert_same_rows(spark, "json", [path], ddl)


def test_timestamp_ntz_ignores_timestamp_format(spark, tmp_path):
    """TIMESTAMP_NTZ has its own option (timestampNTZFormat, left at its default): timestampFormat is not it."""
    path = write(tmp_path, "ntz.json", "\n".join(json.dumps({"i": i, "n": v}) for i, v in enumerate(
        ["02/01/2024 03:04", "2024-01-02 03:04:05", "2024-01-02T03:04:05Z"])))
    assert_same_rows(spark, "json", [path], "i INT, n TIMESTAMP_NTZ", {"timestampFormat": "dd/MM/yyyy HH:mm"})


INFER_FILES = [
    NESTED, UNEVEN,
    '{"a": 1}\n{"a": 1.5}\n{"a": "x", "b": [1, 2.5]}\n{"b": [], "c": {}}\n{"d": [{"x": 1}, {"y": true}], "e": null}\n',
    '{"big": 12345678901234567890, "dec": 1.25, "z": [[1], [2.5]]}\n{"big": 1, "dec": 2}\n',
]


@pytest.mark.parametrize("text", INFER_FILES, ids=range(len(INFER_FILES)))
@pytest.mark.parametrize("infer_types,decimals", [(False, False), (True, False), (True, True)])
def test_infer_is_spark_s_inferred_schema(spark, tmp_path, text, infer_types, decimals):
    if decimals and "1e20" in text:
        pytest.skip("Spark itself fails: prefersDecimal infers 1e20 as a negative-scale decimal")
    from pyspark.sql.pandas.types import to_arrow_schema
    path = write(tmp_path, "infer.json", text)
    options = {"primitivesAsString": str(not infer_types).lower(), "prefersDecimal": str(decimals).lower()}
    theirs = to_arrow_schema(spark.read.options(**options).json(str(path)).schema)
    opts = {"prefersDecimal": decimals}
    ours = reader_of("json").infer(pa.py_buffer(path.read_bytes()), FormatOptions("json", opts), infer_types)
    assert ours == theirs, f"\nspark: {theirs}\nours:  {ours}"


def test_unknown_fields_and_the_rescued_column(tmp_path):
    """Not compared with Spark (its corrupt-record column differs): what the stream learns about a file."""
    path = write(tmp_path, "extra.json", '{"a": 1, "b": {"x": 1, "new": 2}, "c": "extra"}\n'
                                        '{"a": "bad", "b": {"x": 2}, "d": [1, 2.50]}\n{"a": 3}\n')
    fields = [pa.field("a", pa.int64()), pa.field("b", pa.struct([pa.field("x", pa.int64())]))]
    file = local_file(path)
    plain = reader_of("json").read(pa.py_buffer(path.read_bytes()), fields, FormatOptions("json"), file)
    assert set(plain.unknown) == {"c", "d", "b.new"} and plain.malformed == 1
    assert plain.reason.startswith("record 2: a: ") and "int64" in plain.reason
    rescued = reader_of("json").read(pa.py_buffer(path.read_bytes()), fields,
                                     FormatOptions("json", {}, "PERMISSIVE", "_rescued"), file)
    got = [json.loads(r) if r else None for r in rescued.table.column("_rescued").to_pylist()]
    # b's undeclared nested field: b goes to the rescued column whole
    assert got == [{"b": {"x": 1, "new": 2}, "c": "extra", "_file_path": file.uri},
                   {"a": "bad", "d": [1, 2.50], "_file_path": file.uri}, None]
    assert rescued.table.column("a").to_pylist() == [1, None, 3]
    # A good file with an undeclared field stays on the fast path and still reports it.
    good = write(tmp_path, "good.json", '{"a": 1, "z": 2}\n{"a": 2, "b": {"x": 1, "q": [1]}}\n')
    fast = reader_of("json").read(pa.py_buffer(good.read_bytes()), fields, FormatOptions("json"), file)
    assert set(fast.unknown) == {"z", "b.q"} and fast.table.column("a").to_pylist() == [1, 2]


def test_variant_columns_hold_spark_s_own_encoding(spark, tmp_path):
    """VARIANT travels through a Python source as Arrow struct<value, metadata>; the bytes are Spark's."""
    path = write(tmp_path, "v.json", '{"id":1,"v":{"b":[1,2.5,"x",null,true],"a":1},"s":{"v":[1]}}\n'
                 '{"id":2,"v":"text"}\n{"id":3,"v":12345678901234}\n{"id":4}\n{"id":5,"v":null}\n'
                 '{"id":6,"v":1e300}\n{"id":7,"v":-0.000001}\n{"id":8,"v":"\\u00e9\\n"}\n')
    ddl = "id LONG, v VARIANT, s STRUCT<v: VARIANT>"

    def as_bytes(v):
        return None if v is None else (bytes(v.value), bytes(v.metadata))
    theirs = [(r.id, as_bytes(r.v), r.s and as_bytes(r.s.v)) for r in spark.read.schema(ddl).json(str(path)).collect()]
    ours = [(r["id"], r["v"] and (r["v"]["value"], r["v"]["metadata"]),
             r["s"] and r["s"]["v"] and (r["s"]["v"]["value"], r["s"]["v"]["metadata"]))
            for r in source_rows(spark, "json", [path], ddl)]
    assert ours == theirs
    assert theirs[4][1] == (b"\x00", b"\x01\x00\x00")  # a JSON null is a VARIANT null, not a missing value
