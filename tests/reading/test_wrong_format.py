"""A file in which every row is malformed (a CSV file read as JSON, JSON lines read as CSV) is set aside with
the reason, not committed as rows of nulls: the pure rule (reading/wrong_format.py), then the real reader
over local files, whole, streamed in blocks and split across tasks, with its quarantine records and copies
and the batch's figures as the job reports them."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from s3sqs.core.errors import FileReadError
from s3sqs.core.files import Piece, S3File
from s3sqs.core.vocabulary import Mode
from s3sqs.job.metrics import MALFORMED, QUARANTINED, batch_metrics, emf_document
from s3sqs.reading import blocks
from s3sqs.reading import reader as reader_module
from s3sqs.reading.formats import FormatOptions
from s3sqs.reading.reader import ReadSpec, read_partition
from s3sqs.reading.wrong_format import may_set_aside, not_the_format, shaping_options
from s3sqs.state import quarantine
from s3sqs.state.store import open_store

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
BATCH_END = 4
CSV = b"id,name\n1,a\n2,b\n3,c\n"
JSON_LINES = b'{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n{"id": 3, "name": "c"}\n'
MIXED_JSON = b'{"id": 1, "name": "a"}\n{"id": "x", "name": "b"}\nnot json\n{"id": 4, "name": "d"}\n'


# --- the rule --------------------------------------------------------------------------------------

def test_a_file_whose_every_row_is_malformed_is_not_its_format():
    fo = FormatOptions("json")
    why = not_the_format(fo, 3, 3, "record 1: not JSON (x)")
    assert why == ("not json as declared: every one of its 3 rows is malformed, read as fileFormat json with "
                   "multiLine=false; the first: record 1: not JSON (x). Check that the file is json and that these "
                   "options and the schema fit it, then reprocess its batch; or declare the rescued-data column to "
                   "keep such rows")
    assert "its first 3 rows" in not_the_format(fo, 3, 3, None, whole=False)


@pytest.mark.parametrize("rows, malformed", [(3, 2), (1, 0), (0, 0), (5, 0)])
def test_a_file_with_a_row_that_parses_or_with_no_rows_goes_in(rows, malformed):
    assert not_the_format(FormatOptions("csv"), rows, malformed, "row 2: ...") is None


@pytest.mark.parametrize("mode, rescued", [(Mode.DROPMALFORMED, None), (Mode.FAILFAST, None),
                                           (Mode.PERMISSIVE, "_rescued_data")])
def test_the_user_s_choice_to_drop_or_keep_bad_rows_stands(mode, rescued):
    fo = FormatOptions("json", {}, mode, rescued)
    assert not may_set_aside(fo) and not_the_format(fo, 3, 3, "record 1: not JSON") is None


def test_columns_the_schema_lacks_are_for_schema_evolution_to_decide():
    """A CSV header wider than the schema makes every row malformed: the schema changed, the file is CSV."""
    assert not_the_format(FormatOptions("csv", {"header": True}), 2, 2, "row 1: 3 values", ("extra",)) is None


def test_the_reason_names_the_options_that_decide_the_rows():
    # Options as the source hands them to the readers: parsed (config/format_options.py).
    assert shaping_options(FormatOptions("csv", {"header": True, "sep": ";"})) == \
        "header=true, sep=';', quote='\"', escape='\\\\', multiLine=false"
    assert shaping_options(FormatOptions("json", {"multiLine": True, "encoding": "utf-16", "lineSep": "\n"})) == \
        "multiLine=true, encoding='utf-16', lineSep='\\n'"
    assert shaping_options(FormatOptions("xml", {"rowTag": "book"})) == "rowTag='book'"


# --- the real reader -------------------------------------------------------------------------------

def local(path: Path, seq: int) -> S3File:
    return S3File("", str(path).lstrip("/"), path.stat().st_size, event_ms=1_700_000_000_000, scheme="file", seq=seq)


def files(tmp_path, **contents: bytes) -> list[S3File]:
    out = []
    tmp_path.mkdir(parents=True, exist_ok=True)
    for seq, (name, data) in enumerate(contents.items(), start=1):
        path = tmp_path / name.replace("_", ".")
        path.write_bytes(data)
        out.append(local(path, seq))
    return out


def read(items, tmp_path, fmt: str, schema: pa.Schema = SCHEMA, **spec) -> tuple[list[dict], dict[str, dict]]:
    """The rows a task yields for the files, and the batch's quarantine records by file name."""
    location = str(tmp_path / "quarantine")
    fo = FormatOptions(fmt, spec.pop("options", {}), spec.pop("mode", Mode.PERMISSIVE), spec.pop("rescued", None))
    batches = list(read_partition(items, ReadSpec(fo, quarantine_location=location, **spec), schema, BATCH_END))
    records = quarantine.read_records(open_store(location, None), BATCH_END)
    return pa.Table.from_batches(batches, schema).to_pylist(), {r["file"].rsplit("/", 1)[-1]: r for r in records}


def assert_set_aside(record: dict, fmt: str, first: str, data: bytes):
    assert record["status"] == "quarantined" and record["malformed_rows"] == 0
    assert record["error"].startswith(f"MalformedFile: not {fmt} as declared: every one of its "), record["error"]
    assert first in record["error"]
    assert Path(record["copy"]).read_bytes() == data  # retrievable as any quarantined file is


def test_csv_read_as_json_and_json_lines_read_as_csv_are_quarantined_with_the_reason(tmp_path):
    as_json = files(tmp_path / "j", orders_csv=CSV, good_json=JSON_LINES, mixed_json=MIXED_JSON)
    rows, records = read(as_json, tmp_path / "j", "json")
    assert_set_aside(records["orders.csv"], "json", "multiLine=false; the first: record 1: not JSON", CSV)
    # The good file's rows, and the mixed file's, malformed ones included (nulls where values do not fit).
    assert sorted(rows, key=str) == sorted(
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"},
         {"id": 1, "name": "a"}, {"id": None, "name": "b"}, {"id": None, "name": None}, {"id": 4, "name": "d"}],
        key=str)
    assert records["mixed.json"]["status"] == "malformed_rows" and records["mixed.json"]["malformed_rows"] == 2
    assert "good.json" not in records

    as_csv = files(tmp_path / "c", events_json=JSON_LINES, plain_csv=b"1,a\n2,b\n")
    rows, records = read(as_csv, tmp_path / "c", "csv")
    assert_set_aside(records["events.json"], "csv",
                     "header=false, sep=',', quote='\"', escape='\\\\', multiLine=false; the first: row 1: column "
                     "'id' value '{\"id\": 1' is not int64", JSON_LINES)
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def test_the_batch_counts_the_file_quarantined_and_only_the_malformed_rows_kept(tmp_path):
    _, records = read(files(tmp_path, orders_csv=CSV, mixed_json=MIXED_JSON), tmp_path, "json")
    problems = quarantine.tally(list(records.values()))
    assert problems == {"quarantined": 1, "missing": 0, "malformed_rows": 2, "new_columns": 0}
    document = emf_document(batch_metrics({"batchId": 1}, {}, {}, problems, {}, 0, 0), "orders", 0)
    assert (document[QUARANTINED], document[MALFORMED]) == (1, 2)


def test_with_on_bad_file_fail_the_batch_stops_naming_the_file_and_the_reason(tmp_path):
    (item,) = files(tmp_path, orders_csv=CSV)
    with pytest.raises(FileReadError, match=r"could not read file:///.*orders\.csv: MalformedFile: not json as declared"
                                            r".*onBadFile=quarantine"):
        read([item], tmp_path, "json", on_bad_file="fail")


def test_declared_rescued_data_or_dropmalformed_keep_today_s_rows(tmp_path):
    (item,) = files(tmp_path / "r", orders_csv=CSV)
    rescued = pa.schema([*SCHEMA, ("_rescued_data", pa.string())])
    rows, records = read([item], tmp_path / "r", "json", rescued, rescued="_rescued_data")
    assert [json.loads(r["_rescued_data"])["_row"] for r in rows] == ["id,name", "1,a", "2,b", "3,c"]  # nothing lost
    assert records["orders.csv"]["status"] == "malformed_rows" and records["orders.csv"]["malformed_rows"] == 4
    (item,) = files(tmp_path / "d", orders_csv=CSV)
    rows, records = read([item], tmp_path / "d", "json", mode=Mode.DROPMALFORMED)
    assert rows == [] and records["orders.csv"]["dropped_rows"] == 4


def test_a_wider_csv_header_is_a_schema_change_not_a_wrong_format(tmp_path):
    (item,) = files(tmp_path, wide_csv=b"id,name,extra\n1,a,x\n2,b,y\n")
    rows, records = read([item], tmp_path, "csv", options={"header": True})
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert records["wide.csv"]["new_columns"] == ["extra"] and records["wide.csv"]["status"] == "malformed_rows"


# --- files read in blocks, and split across tasks ---------------------------------------------------

@pytest.fixture
def in_blocks(monkeypatch):
    """Every file streamed in blocks of a few lines."""
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 24)


def test_a_streamed_file_is_judged_before_any_of_its_rows_goes_out(tmp_path, in_blocks):
    late_good = b"not json\n" * 20 + b'{"id": 7, "name": "g"}\n'
    items = files(tmp_path, orders_csv=CSV * 10, late_json=late_good)
    rows, records = read(items, tmp_path, "json")
    assert_set_aside(records["orders.csv"], "json", "its 40 rows is malformed", CSV * 10)
    # A row that parses only in a later block: every row of the file goes in, as read whole.
    assert rows == [{"id": None, "name": None}] * 20 + [{"id": 7, "name": "g"}]
    assert records["late.json"]["malformed_rows"] == 20


def test_a_streamed_file_holds_back_a_bounded_amount_of_rows(tmp_path, in_blocks, monkeypatch):
    monkeypatch.setattr(reader_module, "HOLD_BYTES", 200)
    (item,) = files(tmp_path, orders_csv=CSV * 50 + JSON_LINES)
    rows, records = read([item], tmp_path, "json")
    # No row parsed by the bound: set aside on its first rows, none of them out, though a later one parses.
    assert rows == []
    assert_set_aside(records["orders.csv"], "json", "every one of its first ", CSV * 50 + JSON_LINES)


def test_each_piece_of_a_split_file_is_judged_and_the_file_has_one_record(tmp_path, in_blocks):
    data = CSV * 20
    (item,) = files(tmp_path, orders_csv=data)
    half = len(data) // 2
    rows, records = read([Piece(item, 0, half), Piece(item, half, None)], tmp_path, "json")
    assert rows == []
    assert_set_aside(records["orders.csv"], "json", "of the file, read by one task)", data)
