from datetime import datetime, timedelta, timezone

from s3sqs.events import FileEvent
from s3sqs.planner import DUPLICATE, GLOB_MISMATCH, NEW, TOO_OLD, batch_end, decide, dedup_key, glob_matches, pack

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def fe(key, age_days=0, etag="e1"):
    return FileEvent("b", key, 10, etag, None, None, NOW - timedelta(days=age_days), "ObjectCreated:Put")


def test_decide_classifies_new_duplicate_old_and_filtered():
    seen = {"b/old-seen.csv": 7}
    files = [fe("a.csv"), fe("a.csv"), fe("old-seen.csv"), fe("ancient.csv", age_days=20), fe("notes.txt")]
    out = decide(files, seen.get, NOW, 15 * 86400, "*.csv", False)
    assert [d.outcome for d in out] == [NEW, DUPLICATE, DUPLICATE, TOO_OLD, GLOB_MISMATCH]
    assert out[2].seen_seq == 7


def test_overwrites_make_a_new_etag_a_new_file():
    assert dedup_key(fe("k", etag="1"), False) == dedup_key(fe("k", etag="2"), False)
    assert dedup_key(fe("k", etag="1"), True) != dedup_key(fe("k", etag="2"), True)


def test_glob_matches_file_name_or_whole_key():
    assert glob_matches("*.csv", "dir/x.csv") and not glob_matches("*.csv", "dir.csv/x.json")
    assert glob_matches("in/*/x.csv", "in/2026/x.csv") and glob_matches(None, "anything")


def test_batch_end_respects_file_and_byte_limits():
    assert batch_end(10, 50, 100, None) == 50
    assert batch_end(10, 50, 5, None) == 15
    assert batch_end(10, 50, None, 25, [10, 10, 10, 10]) == 12
    assert batch_end(10, 50, None, 5, [10, 10]) == 11  # one file even when it alone is over the limit
    assert batch_end(10, 10, 5, None) == 10


def test_pack_groups_small_files_and_spreads_big_ones():
    sizes = [100 << 20, 90 << 20] + [1 << 10] * 50
    parts = pack(sizes, lambda s: s, 128 << 20, min_partitions=2)
    small_parts = [p for p in parts if all(s == 1 << 10 for s in p)]
    assert len(small_parts) <= 2  # small files share partitions (4 MB open cost each)
    assert [100 << 20] in parts and sum(len(p) for p in parts) == 52
    assert all(sum(s + (4 << 20) for s in p) <= 128 << 20 or len(p) == 1 for p in parts)
    assert pack([], lambda s: s, 1) == []
