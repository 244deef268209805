"""The JSON reader's pure helpers: the type-guided walker, schema inference."""
import json

import pyarrow as pa
import pytest

from s3sqs.reading.formats import FormatOptions, reader_of
from s3sqs.reading.formats.json.inference import infer_schema


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


def test_a_value_with_undeclared_nested_fields_is_rescued_whole():
    f = [pa.field("s", pa.struct([("x", pa.int64())])), pa.field("r", pa.list_(pa.struct([("a", pa.int64())])))]
    text = ('{"s": {"x": 1, "y": "new"}, "r": [{"a": 1}]}\n'
            '{"s": {"x": 2}, "r": [{"a": 2}, {"a": 3, "b": [true]}]}\n'
            '{"s": {"x": 3}, "r": []}\n')
    got = reader_of("json").read(pa.py_buffer(text.encode()), f,
                                 FormatOptions("json", {}, "PERMISSIVE", "_rescued"), None)
    rows = got.table.to_pylist()
    assert [r["s"] for r in rows] == [{"x": 1}, {"x": 2}, {"x": 3}]
    assert [json.loads(r["_rescued"]) if r["_rescued"] else None for r in rows] == [
        {"s": {"x": 1, "y": "new"}}, {"r": [{"a": 2}, {"a": 3, "b": [True]}]}, None]
    assert set(got.unknown) == {"s.y", "r.b"} and got.malformed == 0
