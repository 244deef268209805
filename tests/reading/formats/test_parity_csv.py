"""The CSV reader gives the rows Spark's own CSV reader gives, option by option, on the Spark under test.

Each case writes small files, reads them through Spark's batch reader and through this source's executor
reader (tests/support/parity.py), and compares the rows. The corpus holds what CSV files hold in the
wild: quotes, escapes, doubled quotes, text after a closing quote, line breaks inside quoted values,
unicode, empty and null values, whitespace, comments, blank lines, rows too short and too long (in each
mode), other encodings, a BOM, gzip. The inference cases compare infer() with Spark's inferred schema.
"""
from __future__ import annotations

import gzip

import pyarrow as pa
import pytest

from s3sqs.reading.formats import FormatOptions, MalformedFile
from s3sqs.reading.formats import csv as csv_reader
from tests.reading.formats.every_row_malformed import assert_set_aside_where_spark_keeps_rows
from tests.support.parity import assert_same_rows, parity_session

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    with parity_session("csv") as session:
        yield session


S2 = "a STRING, b STRING"
IS = "id INT, name STRING"

MESSY = (
    'x,"a""b"\n'            # a doubled quote is not an escape by default: the value stays as written
    'x,"a\\"b"\n'           # the backslash escapes the quote
    'x,"a\\nb"\n'           # ... and nothing else
    'x,"a\\\\"\n'           # ... but itself before a quote
    'x,a\\"b\n'             # outside quotes it is a plain char
    'x,a"b\n'               # so is a quote inside an unquoted value
    'x,"abc"def\n'          # text after a closing quote: the value is literal
    'x,"abc"  \n'           # whitespace after a closing quote is dropped
    'x,  "abc"\n'           # whitespace before an opening quote makes the value unquoted
    'x,"a,b"\n'
    'x,""\n'
    'x,\n'
    ',\n'
    'x,"1,"abc\n'
    '"x",y,\n'              # too long
    'q\n'                   # too short
    'x,"unterminated\n'
    'ünï,çødé ☃\n'
    'x, spaced \n'
)
QUOTED_BREAKS = 'x,"a\nb"\r\ny,"c\r\nd"\r\nz,e\r\n"p,q",r\r\n'
TYPES = ("i INT, l LONG, t TINYINT, d DOUBLE, f FLOAT, b BOOLEAN, m DECIMAL(10,2), dt DATE, ts TIMESTAMP, "
         "nz TIMESTAMP_NTZ, bin BINARY")
TYPED = "\n".join([
    "1,9223372036854775807,127,1.5,1.25,true,1.235,2020-01-15,2020-01-15T10:20:30,2020-01-15 10:20:30,abc",
    "+1,-0,-128, 1.5 ,3.4e39,TRUE,-1.235,2020-1-5,2020-01-15 10:20,2020-01-15,é",
    " 1,9223372036854775808,128,1e5,NaN,tRuE,1e3,2020-01,2020-01-15T10:20:30Z,2020-01-15T10:20:30Z,",
    "1 ,007,0,1.5d,Inf,1,1.225,2020,2020-01-15T10:20:30+01:00,x,\"\"",
    "1.0,1e3,x,0x1p3,-Inf,yes,+1.5,2020-01-15T10:00,2020-01-15T10:20:30.123456789,2020-01-15T10,q",
    "2147483648,x,1,Infinity,-Infinity,false,.5,2020-02-30,2020-01-15T10:20:30 UTC,2020-01-15T10:20:30.5,",
    "0x10,5,2,inf,nan,FALSE,12345678901,2020-01-15x,2020-01-15T10:20:30 America/Los_Angeles,y,z",
    "7,8,9,--1,1,false,5.,20200115,2020-01-15T24:00:00,2020-01-15T10:20:30-08:00,z",
    "8,9,10,.5,5.,false,NaN,2020-01-15 10:00:00,2020-01-15T10:20:30GMT+1,2020-01-15 10:20:30.1,z",
    "9,10,11,+Inf,-0.0,true, 1.5, 2020-01-15 ,2020-01-15T10,2020-1-5 1:2:3,z",
    "1,2,3,4.0,5.0,true,1.5,2020-01-15,2020-01-15T10:20:30.5Z,2020-01-15T10:20:30,z",
]) + "\n"

CASES = [
    # name, {file name: content}, ddl, options
    ("plain-header", {"a.csv": "id,name\n1,a\n2,b\n3,\n"}, IS, {"header": "true"}),
    ("plain-no-header", {"a.csv": "1,a\n2,b\n"}, IS, {}),
    ("quoted-commas", {"a.csv": 'id,name\n1,"Smith, John"\n2,"x"\n3,""\n4,\n'}, IS, {"header": "true"}),
    ("messy-quoting", {"a.csv": MESSY}, S2, {}),
    ("messy-quoting-multiline", {"a.csv": MESSY}, S2, {"multiLine": "true"}),
    ("escape-is-quote", {"a.csv": MESSY}, S2, {"escape": '"'}),
    ("escape-other", {"a.csv": 'x,"a#"b"\nx,"a""b"\nx,"a\\"b"\n'}, S2, {"escape": "#"}),
    ("quote-off", {"a.csv": MESSY}, "a STRING, b STRING, c STRING", {"quote": ""}),
    ("quote-single", {"a.csv": "x,'a,b'\nx,\"a,b\"\nx,'it''s'\n"}, "a STRING, b STRING, c STRING",
     {"quote": "'"}),
    ("sep-semicolon", {"a.csv": "1;a,b\n2;\"c;d\"\n3;1,5\n"}, "id INT, name STRING, m DECIMAL(5,1)",
     {"sep": ";"}),
    ("sep-tab-blank-lines", {"a.tsv": "1\ta\n\t\n  \n2\tb\n\t\t\n"}, IS, {"sep": "\t"}),
    ("quoted-breaks-per-line", {"a.csv": QUOTED_BREAKS}, S2, {}),
    ("quoted-breaks-multiline", {"a.csv": QUOTED_BREAKS}, S2, {"multiLine": "true"}),
    ("breaks-lf-multiline", {"a.csv": 'x,"a\nb"\ny,"c\r\nd"\nz,e\n'}, S2, {"multiLine": "true"}),
    ("breaks-cr-only", {"a.csv": "1,a\r2,b\r3,\"c\rd\"\r"}, IS, {}),
    ("breaks-cr-only-multiline", {"a.csv": "1,a\r2,b\r3,\"c\rd\"\r"}, IS, {"multiLine": "true"}),
    ("blank-lines", {"a.csv": "\n\n1,a\n\n   \n\t\n2,b\n"}, IS, {}),
    ("blank-lines-multiline", {"a.csv": "\n\n1,a\n\n   \n2,b\n"}, IS, {"multiLine": "true"}),
    ("one-column-blank", {"a.csv": "a\n  \n\nb\n"}, "a STRING", {}),
    ("one-column-blank-multiline", {"a.csv": "a\n  \n\nb\n"}, "a STRING", {"multiLine": "true"}),
    ("comment", {"a.csv": "#c\n1,a\n #x\n2,#b\n#\n"}, IS, {"comment": "#"}),
    ("comment-multiline", {"a.csv": "#c\n1,\"a\n#b\"\n #x\n2,#b\n"}, IS, {"comment": "#", "multiLine": "true"}),
    ("comment-header", {"a.csv": "#x\n\nid,name\n1,a\n"}, IS, {"comment": "#", "header": "true"}),
    ("header-after-blank", {"a.csv": "\n  \nid,name\n1,a\n"}, IS, {"header": "true"}),
    ("header-after-blank-multiline", {"a.csv": "\n\nid,name\n1,a\n"}, IS, {"header": "true", "multiLine": "true"}),
    ("header-by-position", {"a.csv": "name,id\n1,a\n"}, IS, {"header": "true"}),
    ("header-wider", {"a.csv": "id,name,extra\n1,a,x\n2,b,y\n"}, IS, {"header": "true"}),
    ("header-wider-drop", {"a.csv": "id,name,extra\n1,a,x\n2,b\n"}, IS,
     {"header": "true", "mode": "DROPMALFORMED"}),
    ("header-only", {"a.csv": "id,name\n"}, IS, {"header": "true"}),
    ("nulls-default", {"a.csv": 'x,\n"",""\n,y\nNA,"NA"\n'}, S2, {}),
    ("null-value", {"a.csv": 'NA,\n"",""\n"NA",b\nna,NA\n'}, S2, {"nullValue": "NA"}),
    ("null-value-int", {"a.csv": 'NA,a\n"",b\n"NA",c\n,d\n'}, IS, {"nullValue": "NA"}),
    ("null-value-int-drop", {"a.csv": 'NA,a\n"",b\n"NA",c\n,d\n'}, IS, {"nullValue": "NA", "mode": "DROPMALFORMED"}),
    ("empty-value", {"a.csv": 'x,\n"",""\n'}, S2, {"emptyValue": "E"}),
    ("empty-and-null-value", {"a.csv": 'x,\n"",""\nN,"N"\n'}, S2, {"emptyValue": "E", "nullValue": "N"}),
    ("empty-value-int", {"a.csv": '1,\n"",""\n'}, IS, {"emptyValue": "0"}),
    ("trim-leading", {"a.csv": ' 1, a \n  "2",  " b "\n 3 ,\n'}, S2, {"ignoreLeadingWhiteSpace": "true"}),
    ("trim-trailing", {"a.csv": ' 1, a \n  "2",  " b "  \n 3 ,\t\n'}, S2, {"ignoreTrailingWhiteSpace": "true"}),
    ("trim-both", {"a.csv": ' 1 , a \n"2" , " b " \n , \n'}, IS,
     {"ignoreLeadingWhiteSpace": "true", "ignoreTrailingWhiteSpace": "true"}),
    ("line-sep", {"a.csv": "1,a;2,b\n;3,\"c;d\";4,\r"}, IS, {"lineSep": ";"}),
    ("line-sep-multiline", {"a.csv": "1,\"a;x\";2,b\n;3,c"}, IS, {"lineSep": ";", "multiLine": "true"}),
    ("line-sep-lf-keeps-cr", {"a.csv": "1,a\rb\n2,b\r\n"}, IS, {"lineSep": "\n"}),
    ("bom", {"a.csv": "\ufeffid,name\n1,a\n"}, IS, {"header": "true"}),
    ("short-long-permissive", {"a.csv": "1\n2,b,c\n3,c\n4,d,\nx,e\n"}, IS, {}),
    ("short-long-drop", {"a.csv": "1\n2,b,c\n3,c\n4,d,\nx,e\n"}, IS, {"mode": "DROPMALFORMED"}),
    ("failfast-good", {"a.csv": "1,a\n2,b\n"}, IS, {"mode": "FAILFAST"}),
    ("typed", {"a.csv": TYPED}, TYPES, {}),
    ("typed-drop", {"a.csv": TYPED}, TYPES, {"mode": "DROPMALFORMED"}),
    ("typed-good-fast", {"a.csv": "1,2,3,4.5,5.5,true,6.25,2020-01-15,2020-01-15T10:20:30,2020-01-15 10:20:30,x\n"
                                  "-1,-2,-3,-4.5e3,0,False,-6.5,2021-12-31,2020-01-15 10:20:30.5,2020-01-15,\n"},
     TYPES, {}),
    ("date-format", {"a.csv": "15/01/2020,15/01/2020 10:20:30\n5/1/2020,15/01/2020 10:20\n2020-01-15,"
                              "2020-01-15T10:20:30\n31/02/2020,01/01/1999 23:59:59\n"},
     "d DATE, t TIMESTAMP", {"dateFormat": "dd/MM/yyyy", "timestampFormat": "dd/MM/yyyy HH:mm:ss"}),
    ("date-format-short", {"a.csv": "15/1/20,1/15/2020 10:20:30 PM\n5/1/2020,01/15/2020 10:20:30 AM\n"},
     "d DATE, t TIMESTAMP", {"dateFormat": "d/M/yy", "timestampFormat": "MM/dd/yyyy hh:mm:ss a"}),
    ("timestamp-fraction-zone", {"a.csv": "2020-01-15 10:20:30.123 +0100\n2020-01-15 10:20:30 -0800\n"
                                          "2020-01-15 10:20:30.1234 +0000\n2020-01-15 10:20:30 Z\n"},
     "t TIMESTAMP", {"timestampFormat": "yyyy-MM-dd HH:mm:ss[.SSS] Z"}),
    ("timestamp-iso-offset", {"a.csv": "2020-01-15T10:20:30.5+01:00\n2020-01-15T10:20:30Z\n"}, "t TIMESTAMP",
     {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss[.SSS]XXX"}),
    ("timestamp-month-names", {"a.csv": "15 Jan 2020 10:20\n15 jan 2020 10:20\n15 January 2020 10:20\n"},
     "t TIMESTAMP", {"timestampFormat": "dd MMM yyyy HH:mm"}),
    ("timestamp-lenient-edges", {"a.csv": "2020-01-15T10:20Z,2020-01-15GMT\n2020-01-15T10Z,2020-01-15T\n"
                                          "2020-01-15T10:20:30 EST,+2020-01-15\n2020-01-15T,2020-01-15 10:20Z\n"
                                          "2020-01-15T10:20:30GMT+1,2020-1-5\n"}, "t TIMESTAMP, d DATE", {}),
    ("timestamp-ntz-ignores-format", {"a.csv": "15/01/2020 10:20:30\n2020-01-15 10:20:30\n2020-01-15T10:20:30Z\n"},
     "t TIMESTAMP_NTZ", {"timestampFormat": "dd/MM/yyyy HH:mm:ss"}),
    ("encoding-latin1", {"a.csv": "1,café\n2,naïve\n".encode("latin-1")}, IS, {"encoding": "ISO-8859-1"}),
    ("encoding-utf16-multiline", {"a.csv": "1,café\n2,\"na\nïve\"\n".encode("utf-16")}, IS,
     {"encoding": "UTF-16", "multiLine": "true"}),
    ("invalid-utf8", {"a.csv": b"1,caf\xe9\n2,ok\n"}, IS, {}),
    ("gzip", {"a.csv.gz": gzip.compress(b"id,name\n1,a\n2,\"b,c\"\n"), "b.csv": "id,name\n3,c\n"}, IS,
     {"header": "true"}),
    ("many-files-header", {"a.csv": "id,name\n1,a\n", "b.csv": "id,name\n2,b\n", "c.csv": ""}, IS,
     {"header": "true"}),
]


# Cases whose every row is malformed (too few values for the schema; no value in the date format): Spark
# commits their rows, this source quarantines the file (docs/formats.md, "Every row malformed"), and gives
# Spark's rows, value for value, once the rescued-data column is declared.
EVERY_ROW_MALFORMED = ("sep-semicolon", "date-format-short")


@pytest.mark.parametrize("name,files,ddl,options",
                         [pytest.param(*c, id=c[0]) for c in CASES])
def test_rows_match_spark(spark, tmp_path, name, files, ddl, options):
    paths = []
    for fname, content in files.items():
        p = tmp_path / fname
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        paths.append(p)
    same = assert_set_aside_where_spark_keeps_rows if name in EVERY_ROW_MALFORMED else assert_same_rows
    rows = same(spark, "csv", paths, ddl, options)
    assert rows or name in ("header-only", "header-wider-drop"), f"{name}: the case reads no rows at all"


def test_failfast_fails_on_the_row_spark_fails_on(spark, tmp_path):
    for content in ("1,a\nx,b\n", "1,a\n2\n", "1,a,b\n"):
        p = tmp_path / "f.csv"
        p.write_text(content)
        with pytest.raises(Exception, match="(?i)malformed"):
            spark.read.schema(IS).option("mode", "FAILFAST").csv(str(p)).collect()
        fields = [pa.field("id", pa.int32()), pa.field("name", pa.string())]
        with pytest.raises(MalformedFile, match="FAILFAST"):
            csv_reader.read(pa.py_buffer(content.encode()), fields, FormatOptions("csv", {}, "FAILFAST"))


def _spark_schema(spark, path, options) -> list[tuple[str, str]]:
    from pyspark.sql.pandas.types import to_arrow_type
    df = spark.read.options(**options).csv(str(path))
    return [(f.name, str(to_arrow_type(f.dataType, timezone="UTC") if "timezone" in
                          to_arrow_type.__code__.co_varnames else to_arrow_type(f.dataType)))
            for f in df.schema.fields]


INFER = {
    "types": "i,l,big,d,b,ts,dt,mixid,mixis,nul,nan,inf,tsz,dec,ws,dtmix,plus,hex,bigexp\n"
             "1,3000000000,92233720368547758070,1.5,true,2020-01-15T10:20:30,2020-01-15,1,1,,NaN,Inf,"
             "2020-01-15T10:20:30Z,1.50, 1,2020-01-15,+1,0x1p3,1e3\n"
             "2,4,1,2,False,2020-01-15 10:20,2020-01-16,2.5,x,,1.0,-Inf,2020-01-15T10:20:30+01:00,2.25,2 ,"
             "2020-01-15T10:20:30,+2,1.5d,2\n",
    "names": "a,a,,b,A\n1,2,3,4,5\n",
    "ragged": "a,b\n1\n2,3,4\n",
    "quoted-header": '"x y","a,b"\n1,true\n',
    "empty": "a,b\n",
}


@pytest.mark.parametrize("name", sorted(INFER))
def test_infer_matches_spark(spark, tmp_path, name):
    p = tmp_path / f"{name}.csv"
    p.write_text(INFER[name])
    for options in ({"header": "true", "inferSchema": "true"}, {"header": "true"}, {"inferSchema": "true"}):
        theirs = _spark_schema(spark, p, options)
        fo = FormatOptions("csv", {"header": options.get("header") == "true"})
        ours = csv_reader.infer(pa.py_buffer(p.read_bytes()), fo, options.get("inferSchema") == "true")
        assert [(f.name, str(f.type)) for f in ours] == theirs, (name, options)


def test_infer_with_formats_and_null_value(spark, tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("d,t,n\n15/01/2020,15/01/2020 10:00:00,NA\n16/01/2020,16/01/2020 11:00:00,2\n")
    options = {"header": "true", "inferSchema": "true", "dateFormat": "dd/MM/yyyy",
               "timestampFormat": "dd/MM/yyyy HH:mm:ss", "nullValue": "NA"}
    theirs = _spark_schema(spark, p, options)
    fo = FormatOptions("csv", {"header": True, "dateFormat": "dd/MM/yyyy", "timestampFormat": "dd/MM/yyyy HH:mm:ss",
                               "nullValue": "NA"})
    assert [(f.name, str(f.type)) for f in csv_reader.infer(pa.py_buffer(p.read_bytes()), fo, True)] == theirs


@pytest.mark.parametrize("name,files,ddl,options", [
    pytest.param(*c, id=c[0]) for c in CASES] + [
    pytest.param("generated", {"big.csv": "id,name,score\r\n" + "\r\n".join(
        (f'{i},"two\nlines {i}",{i}.5', f'{i},"a ""doubled"" {i}",1', f'{i},"esc \\" {i}\r\n",2', f"{i},plain,3",
         f'{i},"after"x,4', f'{i},"名前\r\n{i}",5')[i % 6] for i in range(300))},
                 "id INT, name STRING, score DOUBLE", {"header": "true", "multiLine": "true"}, id="generated")])
def test_rows_read_in_blocks_match_spark(spark, tmp_path, monkeypatch, name, files, ddl, options):
    """Every file read in blocks of whole lines (of whole records, with multiLine), a few bytes each, gives
    Spark's rows all the same."""
    from s3sqs.reading import blocks
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 16)
    test_rows_match_spark(spark, tmp_path, name, files, ddl, options)
