"""How source-state shows the state (ops/state/show.py, pure): --since, the file lines and JSON, a lookup's
answer and the summary. (The command on real state: tests/state/test_view.py.)"""
import json
from datetime import datetime, timezone

import pytest

from ops.state import SourceStateError, show
from s3sqs.state.view import STATUSES, FileState

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
MS = int(NOW.timestamp() * 1000)


def a_file(**changes) -> FileState:
    base = dict(seq=12, batch_id=3, status="committed", bucket="landing", key="in/day=1/a b.csv", size=2048,
                event_ms=MS - 60_000, event_name="ObjectCreated:Put", origin="notification", committed_ms=MS)
    return FileState(**{**base, **changes})


@pytest.mark.parametrize("text, ms", [
    ("90m", MS - 90 * 60_000), ("12h", MS - 12 * 3_600_000), ("3d", MS - 3 * 86_400_000), ("1w", MS - 604_800_000),
    ("2026-11-20T08:00:00Z", MS - 4 * 3_600_000), ("2026-11-20T08:00:00", MS - 4 * 3_600_000),  # UTC by default
    ("2026-11-20T09:00:00+01:00", MS - 4 * 3_600_000), ("2026-11-20", MS - 12 * 3_600_000),
])
def test_since_is_an_iso_time_or_a_duration_ago(text, ms):
    assert show.parse_since(text, NOW) == ms


def test_since_that_is_not_a_time_says_what_is():
    with pytest.raises(SourceStateError, match=r"--since 'yesterday' is not a time: give an ISO time .* or a duration ago"):
        show.parse_since("yesterday", NOW)


def test_a_file_is_one_aligned_line_or_one_json_object():
    line = show.file_line(a_file())
    assert line.split() == ["12", "3", "committed", "2026-11-20T11:59:00Z", "2.0", "KiB", "2026-11-20T12:00:00Z",
                            "s3://landing/in/day=1/a", "b.csv"]
    assert len(show.FILES_HEADER.split("URI")[0]) == len(line.split("s3://")[0])  # the URI column lines up
    pending = show.file_line(a_file(batch_id=None, status="pending", size=None, committed_ms=None))
    assert pending.split()[1:3] == ["-", "pending"] and pending.split()[4:6] == ["-", "-"]
    doc = show.file_json(a_file())
    assert doc["uri"] == "s3://landing/in/day=1/a b.csv" and doc["event_time"] == "2026-11-20T11:59:00Z"
    assert doc["committed_at"] == "2026-11-20T12:00:00Z" and json.loads(json.dumps(doc)) == doc


def test_a_lookup_says_where_each_record_went_and_why_not_when_never_seen():
    lines = show.lookup_lines("in/x.csv.gz", [
        a_file(seq=4, batch_id=1, status="quarantined", key="in/x.csv.gz", error="Error -3 while decompressing",
               quarantine_copy="s3://ck/quarantine/4"),
        a_file(seq=9, batch_id=None, status="pending", key="in/x.csv.gz", committed_ms=None)])
    text = "\n".join(lines)
    assert lines[0] == "in/x.csv.gz: seen 2 times"
    assert "seq 4, batch 1, quarantined" in text and "error      Error -3" in text and "copy       s3://ck/" in text
    assert "seq 9, no batch yet, pending (recorded, not in a batch yet)" in text
    (never,) = show.lookup_lines("in/never.csv", [])
    assert never.startswith("in/never.csv: not in the source state") and "maxFileAge" in never


def summary(**changes) -> dict:
    base = {"state_version": 42, "state_written_at": NOW.timestamp() - 300, "state_bytes": 5 * 1024 * 1024,
            "files_tracked": 1200, "bytes_tracked": 3 * 1024 ** 3, "by_status": dict.fromkeys(STATUSES, 0),
            "oldest_event_ms": MS - 86_400_000, "newest_event_ms": MS, "last_seq": 1200,
            "source_committed_seq": 1100, "sink_committed_seq": 1150, "batches": 12,
            "last_batch": {"id": 11, "start": 1150, "end": 1200, "committed_ms": None, "files": 50},
            "counters": {"duplicate": 7, "new": 1200, "too_old": 0}}
    base["by_status"].update(committed=1140, quarantined=10, planned=50)
    return {**base, **changes}


def test_the_summary_answers_what_is_tracked_where_it_stands_and_how_old_the_state_is():
    lines = show.summary_lines("s3://ck/ingest/source-state", summary(), NOW)
    text = "\n".join(lines)
    assert lines[0] == ("source state: s3://ck/ingest/source-state (version 42, written 2026-11-20T11:55:00Z, "
                        "5 min ago; 5.0 MiB)")
    assert "files tracked: 1,200 (3.0 GiB), events from 2026-11-19T12:00:00Z to 2026-11-20T12:00:00Z" in text
    assert "  quarantined            10" in text and "  planned                50  (in a batch" in text
    assert "the last, 11: offsets (1150, 1200], 50 files, not recorded as committed yet" in text
    assert "sink: Spark committed through offset 1,150; the source recorded its commits through 1,100" in text
    assert text.endswith("counters since the state began: duplicate 7, new 1,200")  # zero counters left out
    bare = "\n".join(show.summary_lines("/s", summary(last_batch=None, sink_committed_seq=None, counters={},
                                                      state_written_at=None), NOW))
    assert "offsets (1150, 1151], 1 file, not" in "\n".join(show.summary_lines("/s", summary(last_batch={
        "id": 11, "start": 1150, "end": 1151, "committed_ms": None, "files": 1}), NOW))
    assert "batches: none planned yet" in bare and "give --checkpoint to read it" in bare and "none" in bare


def test_the_summary_as_json_has_iso_times_beside_the_numbers():
    doc = show.summary_json("/s", summary())
    assert doc["stateLocation"] == "/s" and doc["state_written_at"] == "2026-11-20T11:55:00Z"
    assert doc["oldest_event_time"] == "2026-11-19T12:00:00Z" and doc["last_batch"]["committed_at"] is None
    assert json.loads(json.dumps(doc)) == doc
