"""The XML fast path (xml/fast.py) gives exactly the rows, unknown fields and counts of the step-by-step path
(xml.read_exact), and is taken for plain files only: anything it cannot read exactly goes the other way."""
import json

import pyarrow as pa
import pytest

from s3sqs.config.format_options import reader_options
from s3sqs.reading.formats import FormatOptions, xml
from s3sqs.reading.formats.xml.fast import TAKEN

TYPES = [pa.field("i", pa.int64()), pa.field("n", pa.int32()), pa.field("s", pa.int16()), pa.field("b", pa.int8()),
         pa.field("d", pa.float64()), pa.field("f", pa.float32()), pa.field("ok", pa.bool_()),
         pa.field("m", pa.decimal128(7, 2)), pa.field("day", pa.date32()),
         pa.field("t", pa.timestamp("us", tz="UTC")), pa.field("text", pa.string())]


def rows_of(values: list[dict], head: str = '<?xml version="1.0"?>\n<rows>\n', sep: str = "\n") -> str:
    body = sep.join("<r>" + "".join(f"<{k}/>" if v is None else f"<{k}>{v}</{k}>" for k, v in row.items()) + "</r>"
                    for row in values)
    return f"{head}{body}{sep}</rows>\n"


GOOD = [
    {"i": "1", "n": "-2", "s": "3", "b": "-4", "d": "1.5", "f": "0.1", "ok": "true", "m": "1.005",
     "day": "2024-01-02", "t": "2024-01-02T03:04:05Z", "text": "  a &amp; b &lt;c&gt; "},
    {"i": " +7 ", "n": "--5", "s": "0012", "b": None, "d": "1,234.5", "f": "1e3", "ok": "0", "m": "-3",
     "day": "2024-02-29", "t": "2024-01-02T03:04:05.123456+05:30", "text": None},
    {"i": "9223372036854775807", "n": "2147483647", "s": "-32768", "b": "127", "d": "NaN", "f": "-Infinity",
     "ok": "FALSE", "m": "99999.99", "day": "0999-12-31", "t": "2024", "text": "\t"},
    {"i": "   ", "n": "", "s": "\n", "b": "", "d": "12abc", "f": ".5", "ok": "1", "m": "1,5", "day": "2024-12-31",
     "t": "2024-01-02 03:04:05+0100", "text": "&quot;q&quot; &apos;"},
    {"i": "-0", "n": "0", "s": "0", "b": "0", "d": "-0", "f": "0x1p3", "ok": "True", "m": "0", "day": "2000-01-01",
     "t": "2024-01-02T03:04:05.1234567Z", "text": "é ü ☃"},
]


def reads(text: str, fields, options=None, rescue=None, mode="PERMISSIVE"):
    fo = FormatOptions("xml", reader_options("xml", {"rowTag": "r", **(options or {})}), mode, rescue)
    before = TAKEN["fast"]
    got = xml.read(pa.py_buffer(text.encode()), fields, fo)
    fast = TAKEN["fast"] > before
    want = xml.read_exact(text, fields, fo)
    return got, want, fast


def same(got, want, fields):
    """Row for row, every declared column (the fast path leaves none out; NaN equal to NaN)."""
    def dump(fr):
        return json.dumps(fr.table.to_pylist(), default=str)
    assert got.table.schema == want.table.schema
    assert dump(got) == dump(want)
    assert (got.malformed, got.dropped, got.unknown, got.reason) == (want.malformed, want.dropped, want.unknown,
                                                                      want.reason)


@pytest.mark.parametrize("options", [{}, {"nullValue": "0"}, {"ignoreSurroundingSpaces": "false"},
                                     {"nullValue": ""}, {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ssXXX"},
                                     {"dateFormat": "yyyy-M-d"}])
def test_plain_rows_are_read_fast_and_exactly(options):
    # Values Spark reads in odd ways (--5, 1,234.5, 12abc, 0x1p3) go through the exact parsers per column.
    rows = [dict(r) for r in GOOD]
    if options.get("ignoreSurroundingSpaces") == "false":  # untrimmed " +7 " and "  " are not numbers
        for r in rows:
            r["i"] = r["n"] = r["s"] = r["b"] = "1"
    if options.get("timestampFormat") or options.get("dateFormat"):
        for r in rows:
            r["t"], r["day"] = "2024-01-02T03:04:05Z", "2024-01-02"
    got, want, fast = reads(rows_of(rows), TYPES, options)
    same(got, want, TYPES)
    assert fast and got.table.num_rows == len(GOOD) and got.malformed == 0


def test_the_common_forms_use_arrow_casts_and_give_the_exact_values():
    rows = [{"i": str(k * 7919 - 500), "d": f"{k / 7}", "f": f"{k}.25e-3", "day": f"2024-0{1 + k % 9}-1{k % 10}",
             "t": f"2024-03-0{1 + k % 9}T0{k % 10}:1{k % 6}:2{k % 10}.{k:03d}+0{k % 10}:30", "x": "u"}
            for k in range(200)]
    got, want, fast = reads(rows_of(rows, head="<rows>", sep="\r\n  "), TYPES)
    same(got, want, TYPES)
    assert fast and got.unknown == ("x",)


def test_a_value_that_does_not_fit_leaves_the_file_to_the_exact_path():
    for bad in ({"i": "1.5"}, {"i": "9223372036854775808"}, {"s": "40000"}, {"ok": "yes"}, {"day": "2024-02-30"},
                {"t": "2024-13-01T00:00:00Z"}, {"m": "123456.789"}, {"d": "abc"},
                {"i": "-9223372036854775808"}, {"i": "\u00a0"}, {"d": "inf"}):
        rows = [GOOD[0], {**GOOD[0], **bad}]
        for mode in ("PERMISSIVE", "DROPMALFORMED"):
            got, want, fast = reads(rows_of(rows), TYPES, mode=mode)
            same(got, want, TYPES)
            assert not fast and got.malformed == 1 and got.dropped == (mode == "DROPMALFORMED"), bad


@pytest.mark.parametrize("text", [
    "<rows><r><a>1</a></r><!-- c --><r><a>2</a></r></rows>",                  # a comment
    "<rows><r><a><![CDATA[1]]></a></r></rows>",                              # CDATA
    "<rows><r k='v'><a>1</a></r></rows>",                                    # row attributes
    "<rows><r><a k='v'>1</a></r></rows>",                                    # leaf attributes
    "<rows><r><a>1</a></r><r><b>2</b></r></rows>",                            # another shape
    "<rows><r><a>1</a><b>2</b></r><r><b>2</b><a>1</a></r></rows>",            # another order
    "<rows><r><a>1</a><a>2</a></r></rows>",                                  # a repeated element
    "<rows><r><a>1</a>t</r></rows>",                                         # text beside elements
    "<rows><r><a><x>1</x></a></r></rows>",                                   # nesting
    "<rows><r><a>1</a></r><r><a>2</a></rows>",                               # an unclosed row
    "<rows><r><a>&#65;</a></r></rows>",                                      # a character reference
    "<rows><r><a>&e;</a></r></rows>",                                        # an undefined entity
    "<rows><r><a>1\r2</a></r></rows>",                                       # a carriage return in text
    "<rows><r><a>1\x01</a></r></rows>",                                      # a character XML forbids
    "<rows><r><a>1</a></r><?pi x?></rows>",                                   # a processing instruction
    "<rows><r><p:a>1</p:a></r></rows>",                                      # a prefixed name
    "<rows><r><a>1</a></r ><r><a>2</a></r></rows>",                          # an end tag Spark's scan misses
    '<!DOCTYPE rows [<!ENTITY e "boom">]><rows><r><a>&e;</a></r></rows>',    # a DTD with an entity
])
def test_files_that_are_not_plain_take_the_exact_path(text):
    fields = [pa.field("a", pa.string()), pa.field("b", pa.int64())]
    got, want, fast = reads(text, fields)
    same(got, want, fields)
    assert not fast


def test_the_dtd_entity_is_never_expanded():
    text = '<!DOCTYPE rows [<!ENTITY e "boom">]><rows><r><a>&e;</a></r></rows>'
    got, _, fast = reads(text, [pa.field("a", pa.string())])
    assert not fast and got.malformed == 1 and "boom" not in json.dumps(got.table.to_pylist())


def test_names_match_any_case_unknown_fields_and_the_rescued_column():
    text = rows_of([{"ID": "1", "Name": "a", "extra": "x"}, {"ID": "2", "Name": "b", "extra": "y"}])
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("absent", pa.float64())]
    got, want, fast = reads(text, fields)
    same(got, want, fields)
    assert fast and got.unknown == ("extra",) and got.table.column("absent").null_count == 2
    # Something to rescue: the exact path writes it; nothing to rescue: a null rescued column, fast.
    got, want, fast = reads(text, fields, rescue="_rescued_data")
    same(got, want, fields)
    assert not fast and got.table.column("_rescued_data").null_count == 0
    got, want, fast = reads(rows_of([{"id": "1"}]), fields, rescue="_rescued_data")
    same(got, want, fields)
    assert fast and got.table.column("_rescued_data").to_pylist() == [None]


def test_a_declared_struct_or_array_column_present_in_the_file_takes_the_exact_path():
    text = rows_of([{"a": "1", "b": "2"}])
    for typ in (pa.list_(pa.int64()), pa.struct([pa.field("_VALUE", pa.int64())])):
        fields = [pa.field("a", typ), pa.field("b", pa.int64())]
        got, want, fast = reads(text, fields)
        same(got, want, fields)
        assert not fast
    # Declared but absent: no matter.
    fields = [pa.field("z", pa.list_(pa.int64())), pa.field("b", pa.int64())]
    got, want, fast = reads(text, fields)
    same(got, want, fields)
    assert fast
