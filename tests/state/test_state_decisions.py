"""The state view's pure decisions: a file's status, which batch holds a seq, what a lookup key means, where
the state and quarantine live, and the Arrow table for notebooks. (On real state: tests/state/test_view.py.)"""
import pyarrow as pa
import pytest

from s3sqs.core.files import LISTED, S3File
from s3sqs.core.units import iso
from s3sqs.state.view import BatchIndex, FileState, StateViewError, file_status, key_query, locations, origin, to_table


@pytest.mark.parametrize("seq, planned, committed_through, problem, status", [
    (5, False, 3, None, "pending"),
    (5, True, 3, None, "planned"),
    (3, True, 3, None, "committed"),
    (3, True, 3, {"status": "quarantined"}, "quarantined"),
    (2, True, 3, {"status": "missing"}, "missing"),
    (2, True, 3, {"status": "malformed_rows"}, "malformed_rows"),
    (2, True, 3, {"error": "no status recorded"}, "committed"),
    (5, True, 3, {"status": "quarantined"}, "planned"),  # a problem only counts once its batch is in the sink
])
def test_a_files_status_follows_where_it_stands(seq, planned, committed_through, problem, status):
    assert file_status(seq, planned, committed_through, problem) == status


def test_origin_tells_listed_files_from_announced_ones():
    assert origin(S3File("b", "k", event_name=LISTED)) == "listing"
    assert origin(S3File("b", "k", event_name="ObjectCreated:Put")) == origin(S3File("b", "k")) == "notification"


def test_batches_are_found_by_seq_and_named_by_sparks_batch_id():
    batches = BatchIndex([(0, 4), (4, 4), (4, 9)], {4: 1_000})  # batch 1 was empty
    assert [batches.of(s).id for s in (1, 4, 5, 9)] == [0, 0, 2, 2]
    assert batches.of(0) is None and batches.of(10) is None
    assert batches.get(0).committed_ms == 1_000 and batches.get(2).committed_ms is None
    assert (batches.get(2).start, batches.get(2).end, batches.get(2).files) == (4, 9, 5)
    with pytest.raises(StateViewError, match=r"batch 3 is not in the source state, which holds batches 0\.\.2"):
        batches.get(3)
    with pytest.raises(StateViewError, match="which holds no batch yet"):
        BatchIndex([], {}).get(0)


@pytest.mark.parametrize("text, parsed", [
    ("s3://bucket/in/a b.csv", ("bucket", "in/a b.csv")),
    ("in/a.csv", (None, "in/a.csv")),
    ("file:///tmp/in/a.csv", ("", "tmp/in/a.csv")),
])
def test_a_lookup_key_is_a_uri_or_a_key_in_any_bucket(text, parsed):
    assert key_query(text) == parsed


# A lookup key that names nothing -> what the refusal says.
REFUSED_KEYS = {
    "s3://bucket-only": "names no object",
    "s3://bucket/": "names no object",
    "gs://bucket/key": "only s3:// and file:// URIs",
    "  ": "the key to look up is empty",
}


@pytest.mark.parametrize("text", REFUSED_KEYS)
def test_a_lookup_key_that_names_nothing_is_refused(text):
    with pytest.raises(StateViewError, match=REFUSED_KEYS[text]):
        key_query(text)


def test_state_and_quarantine_are_where_the_job_puts_them():
    assert locations(None, "s3://ck/ingest/", None) == ("s3://ck/ingest/source-state", "s3://ck/ingest",
                                                         "s3://ck/ingest/quarantine")
    assert locations("s3://elsewhere/state/", None, None) == ("s3://elsewhere/state", None,
                                                              "s3://elsewhere/state/quarantine")
    assert locations("/s", "/ck", "/q/") == ("/s", "/ck", "/q")
    with pytest.raises(StateViewError, match="give the checkpoint"):
        locations(None, None, None)


def test_the_table_has_one_typed_row_per_file_and_times_in_utc():
    f = FileState(seq=7, batch_id=1, status="quarantined", bucket="b", key="in/x.csv.gz", size=10,
                  event_ms=1_763_600_000_000, event_name="ObjectCreated:Put", origin="notification",
                  committed_ms=None, error="not gzip", quarantine_copy="s3://ck/quarantine/x")
    table = to_table([f])
    assert table.num_rows == 1 and table.column("uri").to_pylist() == ["s3://b/in/x.csv.gz"]
    assert table.schema.field("event_time").type == pa.timestamp("ms", tz="UTC")
    assert table.column("committed_at").to_pylist() == [None]
    assert iso(f.event_ms) == "2025-11-20T00:53:20Z" and iso(None) is None
