"""The XML reader's pure helpers: Spark's row scan, expat events, value parsing, the reader's
bookkeeping (unknown fields, reason, rescued data, modes) and its refusal of entity declarations."""
import pyarrow as pa
import pytest

from s3sqs.config.format_options import XmlOptions
from s3sqs.reading.formats import FormatOptions, MalformedFile, reader_of
from s3sqs.reading.formats.xml.events import END, ERROR, START, TEXT, row_events
from s3sqs.reading.formats.xml.records import records
from s3sqs.reading.formats.xml.values import BadValue, caster


def test_rows_are_found_as_sparks_text_scan_finds_them():
    text = ("<r><!-- <book>0</book> --><![CDATA[<book>]]><book a='1'/><book/><p:book>x</p:book>"
            "<book><a>x<!-- c -->y</a><book>nested</book></book><book x='2' >t</book><book><a>cut")
    assert records(text, "book") == ["<book a='1'/>", "<book><a>xy</a><book>nested</book></book>",
                                     "<book x='2' >t</book>", "<book><a>cut"]


def test_events_keep_names_raw_and_stop_at_the_first_error_or_after_the_row():
    good, bad, junk = row_events(["<b p:x='1'><p:a>t<![CDATA[<u>]]></p:a></b>", "<b><a>1</c></b>", "<b>1</b><b>2</b>"])
    assert good[:4] == [(START, "b", ["p:x", "1"]), (START, "p:a", []), (TEXT, "t<u>"), (END, "p:a")]
    assert bad[-1][0] == ERROR and "mismatched tag" in bad[-1][1]
    assert [e[0] for e in junk][:3] == [START, TEXT, END] and ERROR not in [e[0] for e in junk]


def test_no_entity_can_be_declared_or_expanded():
    [events] = row_events(["<b><!DOCTYPE x [<!ENTITY e 'boom'>]><a>&e;</a></b>"])
    assert events[-1][0] == ERROR
    [events] = row_events(["<b><a>&undefined;</a></b>"])
    assert events[-1][0] == ERROR and "undefined entity" in events[-1][1]


@pytest.mark.parametrize("typ, text, value", [
    (pa.int64(), "--5", 5), (pa.int64(), "+7", 7), (pa.int64(), "9223372036854775807", 2**63 - 1),
    (pa.float64(), "12abc", 12.0), (pa.float64(), "1,234.5", 1234.5), (pa.float64(), "0x1p3", 8.0),
    (pa.float64(), "1.5F", 1.5), (pa.float64(), "-Infinity", float("-inf")), (pa.bool_(), "1", True),
    (pa.bool_(), "FALSE", False), (pa.decimal128(7, 2), "-1.005", __import__("decimal").Decimal("-1.01")),
    (pa.decimal128(7, 2), "1e2", __import__("decimal").Decimal("100.00")),
])
def test_values_parse_as_the_jvm_parses_them(typ, text, value):
    assert caster(typ, XmlOptions())(text) == value


@pytest.mark.parametrize("typ, text", [
    (pa.int64(), "-9223372036854775808"), (pa.int64(), "1_0"), (pa.int64(), "1.0"), (pa.float64(), "inf"),
    (pa.float64(), "-"), (pa.bool_(), "yes"), (pa.decimal128(6, 2), "123456.7"), (pa.decimal128(6, 2), "NaN"),
    (pa.int16(), "40000"),
])
def test_values_that_do_not_parse(typ, text):
    with pytest.raises(BadValue):
        caster(typ, XmlOptions())(text)


FIELDS = [pa.field("a", pa.int64()), pa.field("s", pa.struct([pa.field("x", pa.string())]))]
DOC = b"<r><book id='1'><a>x</a><b>2</b></book><book><a>2</a><s><x>1</x><y>2</y></s><z>q</z></book><book><a>3</b></book></r>"


def test_reader_reports_unknown_fields_reason_and_rescued_data():
    fo = FormatOptions("xml", {"rowTag": "book"}, rescued_column="_rescued_data")
    got = reader_of("xml").read(pa.py_buffer(DOC), FIELDS, fo)
    assert got.table.column("a").to_pylist() == [None, 2, None] and got.malformed == 2
    assert got.unknown == ("_id", "s.y", "z")
    assert got.reason == "row 1: column 'a': value 'x' is not a valid bigint"
    rescued = got.table.column("_rescued_data").to_pylist()
    assert rescued[0] == '{"_id":"1","a":"x"}' and rescued[1] == '{"s.y":"2","z":"q"}'
    assert rescued[2] == '{"_row":"<book><a>3</b></book>"}'


def test_modes():
    drop = reader_of("xml").read(pa.py_buffer(DOC), FIELDS, FormatOptions("xml", {"rowTag": "book"}, "DROPMALFORMED"))
    assert drop.table.column("a").to_pylist() == [2] and (drop.malformed, drop.dropped) == (2, 2)
    with pytest.raises(MalformedFile, match="FAILFAST"):
        reader_of("xml").read(pa.py_buffer(DOC), FIELDS, FormatOptions("xml", {"rowTag": "book"}, "FAILFAST"))
