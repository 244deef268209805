from datetime import datetime, timedelta, timezone

import json

from s3sqs.core.files import S3File, dedup_key
from s3sqs.core.units import to_ms as ms
from s3sqs.planning.events import parse_body
from s3sqs.planning.fates import DUPLICATE, GLOB_MISMATCH, NEW, TOO_OLD, decide, glob_matches, plan_round
from s3sqs.planning.batch_limits import Limit, batch_end, batch_limit, fresh_first
from s3sqs.planning.intake_pacing import intake_room, next_polls, poll_wait, polls_for
from s3sqs.planning.partitions import pack

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def fe(key, age_days=0, etag="e1"):
    return S3File("b", key, 10, etag, None, ms(NOW - timedelta(days=age_days)), "ObjectCreated:Put")


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
    assert batch_end(10, 50, Limit(100, None)) == 50
    assert batch_end(10, 50, Limit(5, None)) == 15
    assert batch_end(10, 50, Limit(None, 25), [10, 10, 10, 10]) == 12
    assert batch_end(10, 50, Limit(None, 5), [10, 10]) == 11  # one file even when it alone is over the limit
    assert batch_end(10, 10, Limit(5, None)) == 10


def test_batch_limit_has_one_owner_for_both_spark_versions():
    assert batch_limit(100, 1 << 20) == Limit(100, 1 << 20)          # Spark 4.0: the options
    assert batch_limit(100, 1 << 20, "files", 7) == Limit(7, 1 << 20)  # 4.2+: the engine's file count
    assert batch_limit(100, None, "bytes", 99) == Limit(None, 99)
    assert batch_limit(100, None, "all") == Limit(None, None)


def test_intake_stays_a_couple_of_batches_ahead_and_polls_adapt():
    assert intake_room(0, 100) == 200 and intake_room(150, 100) == 50 and intake_room(500, 100) == 0
    assert intake_room(0, None) == 10_000
    assert intake_room(5_000, 100, latest_first=True) == 5_000  # latestFirst: the bound alone
    assert next_polls(4, 40, 50) == 8 and next_polls(128, 1280, 50) == 200  # every receive full: widen, to 4 waves
    assert next_polls(8, 35, 50) == 4 and next_polls(1, 0, 50) == 1       # the queue ran dry: narrow
    assert polls_for(15, 8) == 2 and polls_for(1000, 8) == 8
    assert poll_wait(1, 10) == 10 and poll_wait(4, 10) == 1 and poll_wait(4, 0) == 0


def _body(*keys, name="ObjectCreated:Put"):
    return parse_body(json.dumps({"Records": [
        {"eventName": name, "eventTime": "2026-10-31T00:00:00Z",
         "s3": {"bucket": {"name": "b"}, "object": {"key": k, "size": 1}}} for k in keys]}))


def test_plan_round_settles_every_message_and_counts_its_fate():
    bodies = [_body("a.csv", "b.csv"), _body("a.csv"), None, _body("x.txt"), parse_body('{"Event": "s3:TestEvent"}'),
              _body("gone.csv", name="ObjectRemoved:Delete"), parse_body('{"Records": []}'), _body("old.csv")]
    r = plan_round(bodies, {"b/old.csv": 3}.get, NOW, 15 * 86400, "*.csv", False, keep_for_consumer_error=False)
    assert [k for k, _ in r.new_files] == ["b/a.csv", "b/b.csv"]
    assert r.fates == ["new", "duplicate", "unparseable", "filtered", "test_event", "not_created", "no_records",
                       "duplicate"]
    assert r.keep == [False] * 8
    assert r.counts["new"] == 2 and r.counts["duplicate"] == 2 and r.counts["glob_mismatch"] == 1
    assert r.counts["messages_test_event"] == 1 and r.counts["messages_no_records"] == 1
    kept = plan_round(bodies, {}.get, NOW, 15 * 86400, "*.csv", False, keep_for_consumer_error=True).keep
    assert kept == [False, False, True, True, False, False, False, False]


def test_pack_fills_the_slots_and_splits_only_for_bytes():
    small = [1 << 10] * 2000
    parts = pack(small, lambda s: s, 128 << 20, slots=2)
    assert len(parts) <= 3 and sum(map(len, parts)) == 2000  # a task or two per core, not Spark's 60
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # and evenly
    big = [20 << 20] * 50
    parts = pack(big, lambda s: s, 128 << 20, slots=2)
    assert len(parts) == 8 and {len(p) for p in parts} == {6, 7}  # 1 GB: about maxPartitionBytes each
    assert pack([5], lambda s: s, 1, slots=8) == [[5]] and pack([], lambda s: s, 1, slots=2) == []


def _apply(moves, base, last):
    """The files (by their seq before) at each place (base, last] after the moves."""
    at = {n: n for n in range(base + 1, last + 1)}
    assert len({d for _, d in moves}) == len(moves) == len({s for s, _ in moves})
    assert {s for s, _ in moves} == {d for _, d in moves}, "the moves are a permutation"
    for src, dst in moves:
        at[dst] = src
    return [at[n] for n in range(base + 1, last + 1)]


def test_latest_first_takes_the_newest_fresh_files_and_fills_with_the_oldest_backlog():
    # 1,000 pending after offset 100, the last 3 fresh (recorded since the previous plan), batches of 200.
    order = _apply(fresh_first(100, 1100, [1098, 1099, 1100], 200), 100, 1100)
    assert order[:200] == list(range(101, 298)) + [1098, 1099, 1100]
    assert sorted(order) == list(range(101, 1101))      # nothing lost or doubled
    assert order[-3:] == [298, 299, 300]                 # the backlog files they displaced go last in line


def test_latest_first_keeps_a_quarter_of_the_batch_for_the_backlog():
    # 500 fresh files behind 1,000 of backlog: the newest 150 go first, 50 places stay for the oldest backlog.
    order = _apply(fresh_first(0, 1500, range(1001, 1501), 200), 0, 1500)
    assert order[:50] == list(range(1, 51)) and order[50:200] == list(range(1351, 1501))
    assert sorted(order) == list(range(1, 1501))


def test_latest_first_when_fresh_and_displaced_files_overlap():
    # 250 pending, 120 fresh, batches of 200: all 120 go, beside the oldest 80; the backlog keeps its order.
    order = _apply(fresh_first(0, 250, range(131, 251), 200), 0, 250)
    assert order[:50] == list(range(1, 51)) and set(order[50:200]) >= set(range(131, 251))
    assert sorted(order) == list(range(1, 251))
    backlog_after = [n for n in order[200:]]
    assert backlog_after == sorted(backlog_after)


def test_latest_first_moves_nothing_when_every_pending_file_fits_or_nothing_is_fresh():
    assert fresh_first(0, 150, [141], 200) == []   # all pending fit
    assert fresh_first(0, 1000, [], 200) == []     # nothing announced since the previous plan
    assert fresh_first(500, 1000, [3, 499], 200) == []  # ... or only files a plan already has
    # Everything fresh (a first plan after a burst): the most recently announced 200 go first.
    assert _apply(fresh_first(500, 1000, range(501, 1001), 200), 500, 1000)[:200] == list(range(801, 1001))


def test_latest_first_leaves_listed_files_in_the_backlog():
    # A listing recorded 990 files while 10 were announced among them: only those 10 go first.
    announced = list(range(10, 1001, 100))
    order = _apply(fresh_first(0, 1000, announced, 100), 0, 1000)
    assert sorted(order[:100]) == sorted(announced + [n for n in range(1, 101) if n not in announced][:90])
    assert sorted(order) == list(range(1, 1001))


def test_latest_first_takes_the_newest_by_event_time_whatever_their_seqs():
    # 50 announced in one receive, numbered in SQS's order: seq 51 is the newest event, seq 100 the oldest.
    # `fresh` comes oldest first (Ledger.take_fresh orders it), so the newest 15 are seqs 51..65.
    order = _apply(fresh_first(0, 100, list(range(100, 50, -1)), 20), 0, 100)
    assert set(order[:20]) == set(range(1, 6)) | set(range(51, 66))
    assert sorted(order) == list(range(1, 101))
