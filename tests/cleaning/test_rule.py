"""The source cleaner's pure parts: its settings (every surface's grammar), the fan-out rule, the check of an
archive copy, the commit markers' format, and the cleaner's progress (its watermarks). (On the moto server:
tests/cleaning/test_cleaner.py and test_source_cleaning_progress.py.)"""
import re

import pytest

from s3sqs.cleaning.actions import MAX_PARTS, copy_problem, part_ranges
from s3sqs.cleaning import progress
from s3sqs.cleaning.progress import Mark, Seen, advance, after, journal_after, starts_over
from s3sqs.cleaning.rule import Commit, Consumer, Head, by_markers, judge
from s3sqs.config.clean import CleanSettingsError, archive_overlap, parse_clean_settings
from s3sqs.config.options import OptionError, parse_options
from s3sqs.core.files import S3File
from s3sqs.core.vocabulary import CleanSource, CleanStatus
from s3sqs.state import markers
from s3sqs.state.store import LocalStore

DAY = 86_400_000
NOW = 1_800_000_000_000
# Two consumers whose prefixes overlap: "all" reads everything under in/, "orders" only in/orders/.
ALL, ORDERS = Consumer("all", "in/"), Consumer("orders", "in/orders/")
HEAD = Head('"0cc175b9c0f1b6a831c399e269772661"', 10)


def commit(consumer: str, ms: int, etag: str = HEAD.etag.strip('"'), size: int = 10) -> Commit:
    return Commit(consumer, etag, size, ms)


# ---- the fan-out rule ----

def test_a_file_committed_by_one_of_the_two_consumers_that_read_it_waits_for_the_other():
    v = judge("in/orders/a.csv", [ALL, ORDERS], [commit("all", NOW - 40 * DAY)], HEAD, 30 * DAY, NOW)
    assert (v.status, v.detail) == (CleanStatus.WAITING, "not yet committed by orders")


def test_a_file_committed_by_both_waits_for_the_retention_after_the_last_commit_then_is_due():
    commits = [commit("all", NOW - 40 * DAY), commit("orders", NOW - 10 * DAY)]
    v = judge("in/orders/a.csv", [ALL, ORDERS], commits, HEAD, 30 * DAY, NOW)
    assert v.status == CleanStatus.RETENTION and v.at_ms == NOW + 20 * DAY  # the last commit, not the first
    v = judge("in/orders/a.csv", [ALL, ORDERS], commits, HEAD, 30 * DAY, NOW + 20 * DAY)
    assert v.status == CleanStatus.DUE


def test_a_file_only_one_consumer_reads_needs_only_its_commit():
    v = judge("in/refunds/b.csv", [ALL, ORDERS], [commit("all", NOW - 31 * DAY)], HEAD, 30 * DAY, NOW)
    assert v.status == CleanStatus.DUE


def test_the_notified_suffix_is_part_of_what_a_consumer_reads():
    json_only = Consumer("json", "in/", ".json")
    assert judge("in/a.csv", [json_only], [commit("json", 0)], HEAD, DAY, NOW).status == CleanStatus.UNMATCHED
    assert judge("in/a.json", [json_only], [commit("json", 0)], HEAD, DAY, NOW).status == CleanStatus.DUE


@pytest.mark.parametrize("now_etag, now_size", [('"ffff"', 10), (HEAD.etag, 11)])
def test_a_file_whose_etag_or_size_changed_since_it_was_committed_is_left_alone_and_says_so(now_etag, now_size):
    v = judge("in/refunds/b.csv", [ALL], [commit("all", NOW - 40 * DAY)], Head(now_etag, now_size), 30 * DAY, NOW)
    assert v.status == CleanStatus.CHANGED and "changed since it was ingested" in v.detail and "all committed" in v.detail


def test_a_file_no_longer_in_the_source_or_no_longer_read_by_anyone_is_never_due():
    assert judge("in/x", [ALL], [commit("all", 0)], None, DAY, NOW).status == CleanStatus.GONE
    assert judge("elsewhere/x", [ALL, ORDERS], [commit("all", 0)], HEAD, DAY, NOW).status == CleanStatus.UNMATCHED


def test_a_commit_of_another_etag_by_a_consumer_that_committed_the_current_one_too_does_not_block():
    commits = [commit("all", NOW - 50 * DAY, etag="old"), commit("all", NOW - 40 * DAY)]
    assert judge("in/a", [ALL], commits, HEAD, 30 * DAY, NOW).status == CleanStatus.DUE


# ---- checking the archive's copy ----

def test_a_copy_in_parts_covers_every_byte_once_in_at_most_ten_thousand_parts():
    assert part_ranges(12, 5) == [(0, 4), (5, 9), (10, 11)]
    assert part_ranges(10, 5) == [(0, 4), (5, 9)]
    for size in (5 << 30 | 1, 6 << 40, 5 << 40):  # just over CopyObject's limit; 6 TiB, beyond S3's 5 TiB
        ranges = part_ranges(size, 512 << 20)
        assert len(ranges) <= MAX_PARTS and ranges[0][0] == 0 and ranges[-1][1] == size - 1
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
        assert all(last - first + 1 >= 512 << 20 for first, last in ranges[:-1])


def test_a_copy_is_good_when_its_size_matches_and_a_single_part_etag_too():
    assert copy_problem(HEAD, Head(HEAD.etag, 10)) is None
    assert copy_problem(HEAD, None) == "is not there"
    assert copy_problem(HEAD, Head(HEAD.etag, 9)) == "has 9 bytes, the source 10"
    assert "has eTag" in copy_problem(HEAD, Head('"other"', 10))
    # A multipart source's eTag is not an MD5: a one-request copy has another; the size (and the copy's
    # condition on the source's eTag) are the check.
    assert copy_problem(Head('"abc-3"', 10), Head('"def"', 10)) is None


# ---- settings ----

@pytest.mark.parametrize("raw, message", [
    ({"cleanSource": "sometimes"}, "cleanSource: 'sometimes' is not allowed; allowed: off, archive, delete"),
    ({"cleanSource": "delet"}, "(did you mean 'delete'?)"),
    ({"cleanSource": "archive"}, "sourceArchiveLocation: required with cleanSource archive"),
    ({"cleanSource": "delete", "cleanSourceRetention": "12h"}, "cleanSourceRetention: '12h' is too short to delete "
                                                                 "after; allowed: at least 1d"),
    ({"cleanSource": "delete", "sourceArchiveLocation": "s3://a-b/x/"}, "sourceArchiveLocation: only allowed with "
                                                                         "cleanSource archive (it is delete)"),
    ({"sourceArchiveLocation": "s3://a-b/x/"}, "only allowed with cleanSource archive (it is off)"),
    ({"cleanSource": "archive", "sourceArchiveLocation": "/tmp/x"}, "'/tmp/x' is not allowed; allowed: s3://bucket/"),
    ({"cleanSource": "archive", "sourceArchiveLocation": "s3://a-b/x*/"}, "has a wildcard"),
    ({"cleanSource": "archive", "sourceArchiveLocation": "s3://a-b/", "cleanSourceRetention": "30"},
     "'30' is not a duration; allowed: a duration with a unit"),
    ({"cleanSourceRetentionn": "1d"}, "unknown setting (did you mean 'cleanSourceRetention'?)"),
])
def test_a_wrong_setting_says_what_is_wrong_and_how_to_fix_it(raw, message):
    with pytest.raises(CleanSettingsError, match=re.escape(message)):
        parse_clean_settings(raw)


def test_settings_default_to_off_and_read_auto_loaders_move_as_archive():
    off = parse_clean_settings({})
    assert (off.mode, off.retention_seconds, off.enabled) == (CleanSource.OFF, 30 * 86400, False)
    s = parse_clean_settings({"cleanSource": "MOVE", "sourceArchiveLocation": "s3://arch-b/landing",
                              "cleanSourceRetention": "2h"})
    assert (s.mode, s.archive_bucket, s.archive_prefix, s.retention_seconds) == ("archive", "arch-b", "landing/", 7200)
    assert s.archive_key("in/a.csv") == "landing/in/a.csv" and s.archive_uri == "s3://arch-b/landing/"
    assert parse_clean_settings(s.as_settings()) == s  # what the stack publishes reads back the same


def test_an_archive_in_the_source_bucket_must_lie_outside_every_consumers_prefix():
    s = parse_clean_settings({"cleanSource": "archive", "sourceArchiveLocation": "s3://src/archive/"})
    assert archive_overlap(s, "src", ["in/", "landing/"]) is None
    assert archive_overlap(s, "other", [""]) is None
    assert "where a consumer reads the whole bucket" in archive_overlap(s, "src", ["in/", ""])
    assert "prefix 'archive/old/'" in archive_overlap(s, "src", ["archive/old/"])


@pytest.mark.parametrize("key", ["cleanSource", "cloudFiles.cleanSource", "cloudFiles.cleanSource.retentionDuration",
                                 "cloudFiles.cleanSource.moveDestination", "sourceArchiveDir", "cleanSourceRetention"])
def test_a_query_given_cleaning_options_is_pointed_at_the_stack(key):
    base = {"fileFormat": "csv", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
            "stateLocation": "/tmp/s"}
    with pytest.raises(OptionError, match="set once for the whole stack: .* cdk.json's sourceCleaning, deploy, and "
                                          "run `source-state clean`"):
        parse_options({**base, key: "archive"})


# ---- commit markers ----

def test_a_marker_holds_the_committed_s3_files_and_reads_back():
    files = [S3File("b", "in/a b.csv", 10, "e1", seq=1), S3File("", "tmp/x.csv", 3, None, seq=2, scheme="file"),
             S3File("b", "in/c.csv", None, None, seq=3)]
    m = markers.marker_of(1, 3, NOW, files)
    assert [f.key for f in m.files] == ["in/a b.csv", "in/c.csv"]  # local files are never cleaned
    assert markers.decode(markers.encode(m)) == m
    assert markers.marker_name(3) == "committed/000000000003.json"
    assert markers.marker_of(1, 1, NOW, files[1:2]) is None


# ---- the commits alone, before any request ----

def test_the_commits_alone_say_waiting_retention_or_unmatched_and_only_due_needs_the_object():
    commits = [commit("all", NOW - 40 * DAY), commit("orders", NOW - 10 * DAY)]
    v = by_markers("in/orders/a.csv", [ALL, ORDERS], commits[:1], 30 * DAY, NOW)
    assert (v.status, v.detail) == (CleanStatus.WAITING, "not yet committed by orders")
    v = by_markers("in/orders/a.csv", [ALL, ORDERS], commits, 30 * DAY, NOW)
    assert (v.status, v.at_ms) == (CleanStatus.RETENTION, NOW + 20 * DAY)
    assert by_markers("in/orders/a.csv", [ALL, ORDERS], commits, 30 * DAY, NOW + 20 * DAY).status == CleanStatus.DUE
    assert by_markers("elsewhere/x", [ALL, ORDERS], commits, DAY, NOW).status == CleanStatus.UNMATCHED


def test_the_commits_alone_never_make_a_file_due_sooner_than_the_object_would():
    """The newest commit of any eTag counts: an older commit of the object there cannot shorten the wait,
    and a changed object is found when the key falls due."""
    commits = [commit("all", NOW - 40 * DAY), commit("all", NOW - 5 * DAY, etag="other")]
    assert judge("in/a", [ALL], commits, HEAD, 30 * DAY, NOW).status == CleanStatus.DUE
    v = by_markers("in/a", [ALL], commits, 30 * DAY, NOW)
    assert (v.status, v.at_ms) == (CleanStatus.RETENTION, NOW + 25 * DAY)
    changed = [commit("all", NOW - 40 * DAY, etag="old")]
    assert by_markers("in/a", [ALL], changed, 30 * DAY, NOW).status == CleanStatus.DUE
    assert judge("in/a", [ALL], changed, HEAD, 30 * DAY, NOW).status == CleanStatus.CHANGED


# ---- the cleaner's progress ----

def seen(last: int, keys: str, first: int | None = None) -> Seen:
    return Seen(markers.marker_name(last), f"tag{last}", first or last, last, frozenset(keys.split()))


def test_a_watermark_passes_each_marker_whose_keys_are_all_settled_and_stops_at_the_first_that_is_not():
    read = [seen(1, "a b"), seen(2, "c"), seen(3, "d e"), seen(4, "f")]
    statuses = {"a": CleanStatus.ARCHIVED, "b": CleanStatus.GONE, "c": CleanStatus.CHANGED,
                "d": CleanStatus.UNMATCHED, "e": CleanStatus.RETENTION, "f": CleanStatus.DELETED}
    mark = advance("s3://ck/x", None, read, statuses)
    assert (mark.name, mark.tag, mark.first, mark.last) == (markers.marker_name(2), "tag2", 2, 2)
    assert [s.name for s in after(mark, read)] == [markers.marker_name(3), markers.marker_name(4)]
    # waiting, due (not acted on: a dry run, --limit) and failed are not settled; nor is a key not judged
    for status in (CleanStatus.WAITING, CleanStatus.DUE, CleanStatus.FAILED, None):
        assert advance("s3://ck/x", None, read[:1], {"a": CleanStatus.ARCHIVED, "b": status}) is None
    assert advance("s3://ck/x", mark, [], statuses) == mark


def test_markers_that_start_over_or_overlap_an_earlier_range_send_the_cleaner_back_to_the_first():
    mark = Mark("s3://ck/x", markers.marker_name(20), "t", 11, 20)
    assert starts_over(mark, [seen(30, "a", first=21), seen(45, "b", first=40)]) is None  # a gap is fine
    assert "inside those of" in starts_over(mark, [seen(35, "a", first=3)])
    assert "inside those of" in starts_over(mark, [seen(30, "a", first=21), seen(31, "a", first=1)])
    # the same commit written again over a longer range (a run that died before recording it) is not
    assert starts_over(mark, [seen(30, "a", first=11)]) is None


def test_the_journal_is_read_from_the_last_chunk_no_pending_key_is_in():
    chunks = [("c1", frozenset({"a"})), ("c2", frozenset({"b"})), ("c3", frozenset({"c"}))]
    assert journal_after("", chunks, {"b"}) == "c1"
    assert journal_after("c0", chunks, set()) == "c3"
    assert journal_after("c0", chunks, {"a"}) == "c0"


def test_the_progress_reads_back_and_a_damaged_one_says_how_to_start_over(tmp_path):
    store = LocalStore(str(tmp_path))
    assert progress.read(store) == progress.Progress()
    p = progress.Progress({"ingest": Mark("s3://ck/x", markers.marker_name(20), "t", 11, 20)}, "cleaned/c1.json")
    progress.write(store, p)
    assert progress.read(store) == p
    store.put_bytes(b'{"v": 2}', progress.NAME)
    with pytest.raises(progress.ProgressError, match=r"\(version 2 is not 1\): delete it, and the next run reads every"):
        progress.read(store)


def test_a_local_store_lists_from_a_name_with_a_tag_that_changes_when_a_file_is_written_again(tmp_path):
    store = LocalStore(str(tmp_path))
    for last in (3, 6, 9):
        store.put_bytes(b"x", markers.marker_name(last))
    listed = markers.listed(store, markers.marker_name(6))
    assert [n for n, _ in listed] == [markers.marker_name(6), markers.marker_name(9)]
    store.put_bytes(b"longer", markers.marker_name(6))
    assert markers.listed(store, markers.marker_name(6))[0][1] != listed[0][1]
