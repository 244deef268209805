"""The JSON reader's pure helpers: Spark's datetime rules, the type-guided walker, schema inference."""
import pyarrow as pa
import pytest

from s3sqs.config.format_options import ISO_DATE, ISO_TIMESTAMP
from s3sqs.reading.formats import FormatOptions, reader_of
from s3sqs.reading.formats.json_infer import infer_schema
from s3sqs.reading.formats.json_time import date_parser, default_date, default_timestamp, timestamp_parser

US = 1_000_000
T2020 = 1577836800 * US  # 2020-01-01T00:00:00Z


@pytest.mark.parametrize("text,expected", [
    ("2020-01-01T00:00:00Z", T2020), ("2020-01-01 00:00:00", T2020), ("2020", T2020), ("2020-1-1", T2020),
    ("2020-01-01T02:00:00+02:00", T2020), ("2020-01-01T02:00:00+0200", T2020), ("2020-01-01T01:00:00+1", T2020),
    ("2020-01-01T01:00:00 Europe/Paris", T2020), ("2019-12-31T16:00:00 PST", T2020),
    ("2020-01-01T00:00:00.1234567Z", T2020 + 123456), ("2020-01-01T00:00:00.", T2020),
    ("2020-02-30", None), ("2020-01-01t00:00:00", None), ("2020-01-01T00:00Z", None), ("2020-01-01T", None),
    ("x", None), ("2020-01-01T00:00:00z", None),
])
def test_default_timestamps_follow_spark_s_lenient_rules(text, expected):
    assert default_timestamp(text) == expected


def test_timestamp_ntz_refuses_a_zone_and_dates_take_the_date_part():
    assert default_timestamp("2020-01-01 00:00:00", ntz=True) == T2020
    assert default_timestamp("2020-01-01T00:00:00Z", ntz=True) is None
    assert default_date("2020-01-01T99:99") == 18262 and default_date("2020-01-01t") is None
    assert default_date("2020-01") == 18262 and default_date("2020-01 x") is None


def test_patterns_are_translated():
    ts = timestamp_parser("yyyy/MM/dd HH:mm:ss[.SSS] Z")
    assert ts("2020/01/01 01:00:00.5 +0100") == T2020 + 500000
    assert ts("2020/1/01 01:00:00 +0100") is None  # MM needs two digits
    assert timestamp_parser("MMM dd yyyy hh:mm:ss a")("jan 01 2020 12:00:00 AM") == T2020
    assert date_parser("dd.MM.yyyy")("01.01.2020") == 18262
    assert timestamp_parser(ISO_TIMESTAMP)("2020-01-01") == T2020 and date_parser(ISO_DATE)("2020") == 18262


def read(text: str, fields, **opts):
    mode = opts.pop("mode", "PERMISSIVE")
    return reader_of("json").read(pa.py_buffer(text.encode()), fields, FormatOptions("json", opts, mode))


def test_nested_values_into_string_keep_their_source_text():
    f = [pa.field("s", pa.string()), pa.field("r", pa.list_(pa.struct([("a", pa.string()), ("b", pa.int64())])))]
    got = read('{"s": {"k": [1, 2.50]}, "r": [{"a": {"k": 1}, "b": 1}]}\n{"s": 1e20, "r": [{"a": 1.10, "b": "x"}]}\n', f)
    assert got.table.to_pylist() == [{"s": '{"k": [1, 2.50]}', "r": [{"a": '{"k": 1}', "b": 1}]},
                                     {"s": "1e20", "r": [{"a": "1.10", "b": None}]}]
    assert got.malformed == 1 and "r.b" in got.reason


def test_a_misfit_nulls_its_field_an_array_or_map_whole():
    f = [pa.field("a", pa.list_(pa.int64())), pa.field("m", pa.map_(pa.string(), pa.int64())),
         pa.field("s", pa.struct([("x", pa.int64()), ("y", pa.int64())])), pa.field("t", pa.int64())]
    got = read('{"a": [1, "x"], "m": {"k": 1, "j": "x"}, "s": {"x": 1, "y": "z"}, "t": 5}\n', f)
    assert got.table.to_pylist() == [{"a": None, "m": None, "s": {"x": 1, "y": None}, "t": 5}]


def test_records_that_are_not_objects():
    f = [pa.field("a", pa.int64())]
    got = read('[{"a": 1}, {"a": 2}]\n[]\n7\nnope\n{"a": 3} tail\n', f)
    assert got.table.column("a").to_pylist() == [1, 2, None, None, 3] and got.malformed == 2
    dropped = read('[{"a": 1}, {"a": "x"}]\n{"a": 3}\n', f, mode="DROPMALFORMED")
    assert dropped.table.column("a").to_pylist() == [3] and dropped.dropped == 2
    assert read('[\n {"a": 1},\n {"a": 2}\n]', f, multiLine=True).table.column("a").to_pylist() == [1, 2]


def test_inference_sorts_widens_and_falls_back_to_string():
    text = '{"b": 1, "a": {"y": 1, "x": [1]}}\n{"b": 1.5, "a": {"x": [2.5], "z": null}}\n{"c": [], "d": {}}\n'
    typed = infer_schema(text, FormatOptions("json").options, True)
    assert typed == pa.schema([("a", pa.struct([("x", pa.list_(pa.float64())), ("y", pa.int64()),
                                                ("z", pa.string())])), ("b", pa.float64()),
                               ("c", pa.list_(pa.string()))])
    text_only = infer_schema(text, FormatOptions("json").options, False)
    assert text_only.field("b").type == pa.string() and text_only.field("a").type.field("x").type == pa.list_(pa.string())
    assert infer_schema('{"a": 1}\n{"a": "x"}\n', FormatOptions("json").options, True).field("a").type == pa.string()
