"""The RocksDB file index and its incremental snapshots, on real RocksDB and a local store."""

from s3sqs.core.files import S3File
from s3sqs.state.snapshots import Snapshots, open_index, read_status
from s3sqs.state.store import LocalStore


def _file(i):
    return S3File("b", f"k/{i}.csv", size=i, event_ms=1000 + i)


def _add(idx, start, n):
    return [f.seq for f in idx.add_files([(f"b/k/{i}.csv", _file(i)) for i in range(start, start + n)], {"new": n})]


def test_snapshot_restores_exactly_what_was_written(tmp_path):
    snaps = Snapshots(LocalStore(str(tmp_path / "state")))
    idx, work = open_index(snaps)
    assert _add(idx, 0, 5) == [1, 2, 3, 4, 5]
    idx.record_batch(0, 3)
    snaps.save(idx.db, work, {**idx.counters(), "stats": idx.stats})
    assert read_status(snaps) == {"version": 1, "last_seq": 5, "committed_seq": 0, "planned_end": 3,
                                  "stats": {"new": 5}, "recent_batches": [[0, 3, 0 + 1 + 2]],  # bytes of seqs 1-3
                                  "backfilling": False}
    _add(idx, 5, 3)  # written but never snapshotted: a crash loses it, and that is allowed
    idx.db.close()

    snaps2 = Snapshots(LocalStore(str(tmp_path / "state")))
    idx2, _ = open_index(snaps2)
    assert idx2.last_seq == 5 and snaps2.version == 1
    assert idx2.records(2, 4) == [_file(i).numbered(i + 1) for i in (1, 2, 3)]  # the same record, numbered
    assert idx2.planned_end == 3
    assert idx2.seq_of("b/k/4.csv") == 5 and idx2.seq_of("b/k/6.csv") is None
    assert idx2.stats["new"] == 5
    idx2.db.close()


def test_snapshots_upload_only_new_files(tmp_path):
    store = LocalStore(str(tmp_path / "state"))
    snaps = Snapshots(store)
    idx, work = open_index(snaps)
    sizes = []
    for b in range(30):
        _add(idx, b * 100, 100)
        sizes.append(snaps.save(idx.db, work).bytes_uploaded)
    # Each version ships its new SST plus small metadata, not the whole index.
    total = sum(p.stat().st_size for p in (tmp_path / "state" / "sst").iterdir())
    assert max(sizes[5:]) < total
    manifests = snaps.manifests()
    assert 5 <= len(manifests) <= 5 + 10  # old versions are pruned every 10
    assert not (tmp_path / "state" / "versions" / "000000000001").exists()
    idx.db.close()
    idx2, _ = open_index(Snapshots(store))
    assert idx2.last_seq == 3000 and idx2.seq_of("b/k/2999.csv") == 3000
    idx2.db.close()


def test_trim_forgets_only_committed_old_files(tmp_path):
    idx, _ = open_index(Snapshots(LocalStore(str(tmp_path / "s"))))
    _add(idx, 0, 10)  # event_ms 1000..1009
    idx.set_committed(5, 0)
    assert idx.trim_older_than(1008) == 5  # seqs 1..5 only: 6..8 are old but not committed
    assert idx.seq_of("b/k/0.csv") is None and idx.seq_of("b/k/6.csv") == 7
    assert [r.seq for r in idx.records(1, 10)] == [6, 7, 8, 9, 10]
    idx.db.close()


def test_the_status_carries_the_size_of_the_last_planned_batches(tmp_path):
    snaps = Snapshots(LocalStore(str(tmp_path / "state")))
    idx, work = open_index(snaps)
    _add(idx, 0, 50)  # sizes 0..49
    idx.record_batch(0, 3)
    idx.record_batch(0, 4)  # a later plan for the same start replaces the first
    idx.record_batch(0, 4)
    for start in range(4, 50):
        idx.record_batch(start, start + 1)
    snaps.save(idx.db, work, {**idx.counters(), "stats": idx.stats})
    batches = read_status(snaps)["recent_batches"]
    assert len(batches) == 32 and batches[-1] == [49, 50, 49] and [0, 4, 6] not in batches
    idx.db.close()
