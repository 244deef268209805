"""Reading files into the declared columns, and malformed rows in each mode, on real pyarrow."""
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from s3sqs.core.vocabulary import Mode
from s3sqs.reading.filesystems import classify, with_retries
from s3sqs.reading.formats import FormatOptions as Parsing
from s3sqs.reading.formats import MalformedFile, empty, reader_of

PERMISSIVE, DROPMALFORMED, FAILFAST = Mode.PERMISSIVE, Mode.DROPMALFORMED, Mode.FAILFAST


def parse(data: pa.Buffer, fields, fo):
    """A whole file held in memory through its format's reader, as the executors read it."""
    if data.size == 0:
        return empty(fields)
    reader = reader_of(fo.file_format)
    return reader.read(pa.BufferReader(data) if reader.RANDOM_ACCESS else data, fields, fo)

FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string())]


def buf(b: bytes) -> pa.Buffer:
    return pa.py_buffer(b)


def rows(parsed, *cols):
    return list(zip(*(parsed.table.column(c).to_pylist() for c in cols)))


def test_good_files_take_the_fast_path_in_every_format():
    csv = parse(buf(b"id,name\n1,a\n2,b\n"), FIELDS, Parsing("csv", {"header": True}))
    assert rows(csv, "id", "name") == [(1, "a"), (2, "b")] and csv.malformed == 0
    # A header column the schema lacks: Spark maps CSV columns by position, so every row is too long.
    wide = parse(buf(b"id,name,extra\n1,a,x\n2,b,y\n"), FIELDS, Parsing("csv", {"header": True}))
    assert rows(wide, "id", "name") == [(1, "a"), (2, "b")] and wide.malformed == 2 and wide.unknown == ("extra",)
    js = parse(buf(b'{"id": 1, "name": "a", "junk": 1}\n{"id": 2}\n'), FIELDS, Parsing("json"))
    assert rows(js, "id", "name") == [(1, "a"), (2, None)] and js.malformed == 0
    out = io.BytesIO()
    pq.write_table(pa.table({"name": ["p"], "id": pa.array([7], pa.int32())}), out)
    assert parse(buf(out.getvalue()), FIELDS, Parsing("parquet")).table.to_pydict() == {"id": [7], "name": ["p"]}


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_zero_byte_file_is_zero_rows(fmt):
    parsed = parse(buf(b""), FIELDS, Parsing(fmt, {"header": True} if fmt == "csv" else {}))
    assert parsed.table.num_rows == 0 and parsed.table.schema.names == ["id", "name"]


CSV_BAD = b"id,name\n1,a\nnot-a-number,b\n3\n4,d,extra\n5,e\n"
JSON_BAD = b'{"id": 1, "name": "a"}\n{"id": "x", "name": "b"}\nnot json at all\n{"id": 4, "name": 5}\n'


def test_permissive_keeps_what_parses_and_rescues_the_rest():
    p = Parsing("csv", {"header": True}, PERMISSIVE, "_rescued_data")
    parsed = parse(buf(CSV_BAD), FIELDS, p)
    got = rows(parsed, "id", "name", "_rescued_data")
    # File order; rows of the wrong shape are padded or cut, as Spark does, and what is past the schema rescued.
    assert [(i, n) for i, n, _ in got] == [(1, "a"), (None, "b"), (3, None), (4, "d"), (5, "e")]
    assert json.loads(got[1][2]) == {"id": "not-a-number", "_file_path": None}
    assert got[2][2] is None and json.loads(got[3][2]) == {"_c2": "extra", "_file_path": None}
    assert got[0][2] is None and parsed.malformed == 3 and parsed.dropped == 0

    js = parse(buf(JSON_BAD), FIELDS, Parsing("json", {}, PERMISSIVE, "_rescued_data"))
    got = rows(js, "id", "name", "_rescued_data")
    assert [(i, n) for i, n, _ in got] == [(1, "a"), (None, "b"), (None, None), (4, "5")]
    assert json.loads(got[1][2]) == {"id": "x"} and json.loads(got[2][2]) == {"_row": "not json at all"}
    assert js.malformed == 2


def test_dropmalformed_drops_and_failfast_fails_naming_the_row():
    dropped = parse(buf(CSV_BAD), FIELDS, Parsing("csv", {"header": True}, DROPMALFORMED))
    assert rows(dropped, "id", "name") == [(1, "a"), (5, "e")] and dropped.dropped == 3
    with pytest.raises(MalformedFile, match="FAILFAST"):
        parse(buf(CSV_BAD), FIELDS, Parsing("csv", {"header": True}, FAILFAST))
    with pytest.raises(MalformedFile, match="FAILFAST"):
        parse(buf(JSON_BAD), FIELDS, Parsing("json", {}, FAILFAST))


def test_headerless_csv_maps_by_position():
    parsed = parse(buf(b"1,a,zzz\n2,b\n"), FIELDS, Parsing("csv"))
    assert rows(parsed, "id", "name") == [(1, "a"), (2, "b")]


def test_errors_are_classified_for_what_to_do_with_the_file():
    assert classify(FileNotFoundError("gone")) == "missing"
    assert classify(OSError("When reading information for key 'k' in bucket 'b': AWS Error NO_SUCH_KEY: "
                            "NoSuchKey")) == "missing"
    assert classify(OSError("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 28, "
                            "Timeout was reached")) == "transient"
    assert classify(OSError("AWS Error SLOW_DOWN during GetObject operation: SlowDown 503")) == "transient"
    assert classify(pa.ArrowInvalid("Parquet magic bytes not found in footer")) == "bad"
    with pytest.raises(OSError) as corrupt_gzip:
        pa.CompressedInputStream(pa.BufferReader(pa.py_buffer(b"not gzip at all")), "gzip").read()
    assert classify(corrupt_gzip.value) == "bad"


# pyarrow's words for S3's 403, as it says them for a HEAD (no body) and a GET.
HEAD_403 = ("When reading information for key 'in/x.csv' in bucket 'b': AWS Error ACCESS_DENIED during HeadObject "
            "operation: No response body.")
GET_403 = "AWS Error ACCESS_DENIED during GetObject operation: Access Denied"


def test_a_403_is_denied_not_missing_transient_or_bad_and_never_retried():
    """S3 answers 403 for a key the job role may not read and, without s3:ListBucket, for a missing one."""
    assert classify(OSError(HEAD_403)) == "denied"
    assert classify(OSError(GET_403)) == "denied"
    assert classify(OSError("AWS Error UNKNOWN (HTTP status 403) during HeadObject operation: No response body."))\
        == "denied"
    calls = []

    def read():
        calls.append(1)
        raise OSError(HEAD_403)
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        with_retries("s3://b/in/x.csv", read, sleep=lambda s: pytest.fail("a 403 was retried"))
    assert len(calls) == 1


def test_the_key_s_own_name_does_not_decide_how_a_failure_is_treated():
    """Digits in a key (a date) are not an HTTP status: a slow read of 'in/2024-04-04.csv' is retried, not
    recorded as missing, and a missing 'in/403.csv' is missing."""
    assert classify(OSError("When reading information for key 'in/2024-04-04.csv' in bucket 'b': AWS Error "
                            "NETWORK_CONNECTION during GetObject operation: curlCode: 28, Timeout was reached"))\
        == "transient"
    assert classify(OSError("When reading information for key 'in/403.csv' in bucket 'b': AWS Error NO_SUCH_KEY: "
                            "NoSuchKey")) == "missing"
    assert classify(OSError("When reading information for key 'in/AccessDenied-404.csv' in bucket 'b': AWS Error "
                            "SLOW_DOWN during GetObject operation: SlowDown 503")) == "transient"
    assert classify(OSError("Couldn't connect to server 'proxy.internal'")) == "transient"  # an apostrophe, no name
