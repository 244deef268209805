"""The parquet sink's log (sinks/file_sink_log.py): names, entries and commits as Spark's file sink makes
them, on a real local folder. Spark reading such a log is tested in tests/sinks/test_parquet_direct.py."""
import json

import pytest

from devtools.committed import committed_files
from s3sqs.sinks.file_sink_log import (FileSinkLogTarget, compact_interval, decode, encode, entry_name, hadoop_uri,
                                       parse_name)
from s3sqs.sinks.location import Location
from s3sqs.sinks.target import SinkError, WrittenFile


def test_names_of_batches_and_compactions():
    assert [parse_name(n) for n in ("0", "9.compact", "12", ".12.abc.tmp", "3.crc", "x")] == \
        [(0, False), (9, True), (12, False), None, None, None]
    assert [entry_name(b, 10) for b in (0, 8, 9, 10, 19)] == ["0", "8", "9.compact", "10", "19.compact"]


@pytest.mark.parametrize("compactions, interval", [
    ([], 10), ([9], 10), ([9, 19], 10), ([4], 5), ([2, 5], 3),
    ([29], 10),   # 30 > 2 * 10: the smallest divisor of 30 from 10 on
    ([15], 16),   # 16 > 10 but not above 2 * 10: the one compaction is the first
    ([36], 37),   # 37 is prime: no divisor from 10 on
])
def test_the_compact_interval_is_worked_out_as_spark_does(compactions, interval):
    assert compact_interval(compactions) == interval


def test_uris_are_quoted_as_hadoop_writes_them():
    assert hadoop_uri("/out/p=a%20b/part-1.parquet") == "file:/out/p=a%2520b/part-1.parquet"
    assert hadoop_uri("/out dir/é.parquet") == "file:/out%20dir/%C3%A9.parquet"
    assert hadoop_uri("s3://bkt/out/p=x%3Ay/f.parquet") == "s3://bkt/out/p=x%253Ay/f.parquet"


def test_an_entry_round_trips_and_a_foreign_version_is_refused():
    statuses = [{"path": "file:/a", "size": 1, "action": "add"}]
    assert encode(statuses).decode().splitlines()[0] == "v1"
    assert decode(encode(statuses), "0") == statuses and decode(encode([]), "0") == []
    with pytest.raises(SinkError, match="_spark_metadata/3 starts with 'v2'"):
        decode(b"v2\n{}", "3")


def _file(tmp_path, n: int) -> WrittenFile:
    path = tmp_path / f"part-{n}.parquet"
    path.write_bytes(b"x")
    return WrittenFile(uri=str(path), relative_path=path.name, size=1, rows=1, modification_time_ms=1000 + n)


def _log(tmp_path) -> dict[str, list[str]]:
    meta = tmp_path / "_spark_metadata"
    return {p.name: [json.loads(line)["path"].rsplit("/", 1)[1] for line in p.read_text().splitlines()[1:]]
            for p in meta.iterdir()}


def test_commits_skip_what_is_in_fill_gaps_compact_every_tenth_and_drop_what_no_reader_reads(tmp_path):
    target = FileSinkLogTarget(Location(str(tmp_path)))
    assert target.committed_batch("q") == -1
    assert target.commit([_file(tmp_path, 0)], "q", 0)
    assert not target.commit([_file(tmp_path, 99)], "q", 0)  # a replayed batch: already in
    target.commit([_file(tmp_path, 3)], "other query", 3)  # batches 1 and 2 wrote nothing
    assert _log(tmp_path) == {"0": ["part-0.parquet"], "1": [], "2": [], "3": ["part-3.parquet"]}
    assert target.committed_batch("q") == 3
    for b in range(4, 21):
        target.commit([_file(tmp_path, b)], "q", b)
    log = _log(tmp_path)
    # 9.compact listed batches 0-9; 19.compact lists everything, and the entries before 9 are gone.
    assert sorted(log, key=lambda n: int(n.split(".")[0])) == ["9.compact", *map(str, range(10, 19)), "19.compact", "20"]
    assert log["19.compact"] == [f"part-{b}.parquet" for b in [0, *range(3, 20)]]
    assert sorted(p.name for p in committed_files(tmp_path)) == sorted(f"part-{b}.parquet" for b in [0, *range(3, 21)])
    entry = json.loads((tmp_path / "_spark_metadata" / "20").read_text().splitlines()[1])
    assert entry == {"path": f"file:{tmp_path}/part-20.parquet", "size": 1, "isDir": False, "modificationTime": 1020,
                     "blockReplication": 1, "blockSize": 32 << 20, "action": "add"}


def test_a_log_spark_compacted_at_another_interval_is_extended_at_that_interval(tmp_path):
    meta = tmp_path / "_spark_metadata"
    meta.mkdir()
    for name in ("4.compact", "5", "6", "7", "8", "9.compact"):
        (meta / name).write_text("v1")
    target = FileSinkLogTarget(Location(str(tmp_path)))
    for b in range(10, 15):
        target.commit([_file(tmp_path, b)], "q", b)
    assert "14.compact" in _log(tmp_path) and "4.compact" not in _log(tmp_path)


def test_a_log_of_another_version_fails_when_the_sink_opens(tmp_path):
    (tmp_path / "_spark_metadata").mkdir()
    (tmp_path / "_spark_metadata" / "0").write_text("v7\n")
    with pytest.raises(SinkError, match="write to a new --output"):
        FileSinkLogTarget(Location(str(tmp_path))).ensure(None)


def test_a_compaction_that_would_miss_a_batch_s_files_fails_instead(tmp_path):
    target = FileSinkLogTarget(Location(str(tmp_path)))
    for b in range(5):
        target.commit([_file(tmp_path, b)], "q", b)
    (tmp_path / "_spark_metadata" / "3").unlink()  # by hand
    for b in range(5, 9):
        target.commit([_file(tmp_path, b)], "q", b)
    with pytest.raises(SinkError, match="no entry for batch 3, which compacting batch 9 needs"):
        target.commit([_file(tmp_path, 9)], "q", 9)
