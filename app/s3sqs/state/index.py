"""The RocksDB file index: every announced file with its sequence number, and the planned batches
(key layout: keys.py).

One writer, the Spark runner process (`FileIndex`). Durability comes from snapshots (snapshots.py).
Readers (the job's metrics, the state view) use `IndexReader` on a private copy.
"""
from __future__ import annotations

import json
from collections import deque
from typing import Callable, Iterator

from rocksdict import Options, Rdict, WriteBatch

from ..core.errors import StateError
from ..core.files import S3File
from . import keys
from .keys import u64

# Planned batches whose size in bytes the snapshot manifest carries, for the job's per-batch metrics.
RECENT_BATCHES = 32


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    # Every snapshot ships the MANIFEST; rolling it over keeps that cost flat instead of growing
    # with the number of snapshots ever taken.
    opts.set_max_manifest_file_size(64 << 10)
    return opts


class IndexReader:
    """An open index, read: files, batches, commits, problems and the counters."""

    def __init__(self, db: Rdict):
        self.db = db
        self.last_seq = self._meta_int(keys.LAST_SEQ)
        self.committed_seq = self._meta_int(keys.COMMITTED)
        self.stats: dict[str, int] = json.loads(self.db.get(keys.meta(keys.STATS)) or b"{}")
        self.planned_end = max(self._last_batch_end(), self.committed_seq)

    def seq_of(self, dedup_key: str) -> int | None:
        v = self.db.get(keys.dedup(dedup_key))
        return None if v is None else keys.int_of(v)

    def iter_records(self, first: int = 1, last: int | None = None) -> Iterator[S3File]:
        """Files from seq `first` (to `last`, inclusive), in order, one at a time."""
        for k, v in keys.scan(self.db, keys.SEQ, keys.seq(first)):
            if last is not None and keys.number(k) > last:
                return
            yield S3File.from_json(v)

    def records(self, first: int, last: int) -> list[S3File]:
        return list(self.iter_records(first, last)) if last >= first else []

    def iter_sizes(self, first: int) -> Iterator[int]:
        return ((r.size or 0) for r in self.iter_records(first))

    def record(self, seq: int) -> S3File | None:
        v = self.db.get(keys.seq(seq))
        return None if v is None else S3File.from_json(v)

    def batches(self) -> list[tuple[int, int]]:
        """Planned batches as (start, end], in order; a batch id is its position."""
        return [(keys.number(k), keys.int_of(v)) for k, v in keys.scan(self.db, keys.BATCH)]

    def _last_batch_end(self) -> int:
        for k, v in self.db.items(backwards=True, from_key=keys.COMMIT):
            return keys.int_of(v) if k.startswith(keys.BATCH) else 0
        return 0

    def batch_ends(self, after: int, upto: int) -> list[int]:
        """Ends of the planned batches that end in (after, upto]."""
        out = []
        for k, v in keys.scan(self.db, keys.BATCH, keys.batch(after)):
            if keys.number(k) >= upto:
                break
            if after < keys.int_of(v) <= upto:
                out.append(keys.int_of(v))
        return out

    def files_of_batches(self, first: int, last: int) -> list[S3File]:
        """The files of planned batches first..last (batch ids, inclusive)."""
        batches = self.batches()
        if last >= len(batches):
            raise StateError(f"reprocessEndBatchId {last} is beyond the {len(batches)} batches in the source state")
        return [r for s, e in batches[first:last + 1] for r in self.records(s + 1, e)]

    def meta(self, name: str) -> bytes | None:
        return self.db.get(keys.meta(name))

    def seqs_since(self, event_ms: int) -> Iterator[int]:
        """Seqs of the files whose event is at or after `event_ms`, oldest event first (the age index)."""
        for k in self.db.keys(from_key=keys.AGE + u64(max(event_ms, 0))):
            if not k.startswith(keys.AGE):
                return
            yield keys.age_parts(k)[1]

    def dedup_entries(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """(dedup key, seq) of every file whose dedup key starts with `prefix`, in key order."""
        for k, v in keys.scan(self.db, keys.dedup(prefix)):
            yield k[1:].decode(), keys.int_of(v)

    def commit_times(self) -> dict[int, int]:
        """Batch end seq -> when the source recorded that batch as committed (ms)."""
        return {keys.number(k): keys.int_of(v) for k, v in keys.scan(self.db, keys.COMMIT)}

    def problems(self) -> dict[int, dict]:
        """Seq -> the record of each committed file that was not read cleanly (quarantine.py)."""
        return {keys.number(k): json.loads(v) for k, v in keys.scan(self.db, keys.PROBLEM)}

    def _meta_int(self, name: str) -> int:
        v = self.meta(name)
        return 0 if v is None else keys.int_of(v)


class FileIndex(IndexReader):
    """The runner's index: reads, and the writes of intake, planning and commits."""

    def __init__(self, db: Rdict):
        super().__init__(db)
        self.dirty = False  # written since the last snapshot
        # (start, end, bytes) of the last planned batches: in memory only, published with each snapshot.
        self.recent_batches: deque[tuple[int, int, int]] = deque(maxlen=RECENT_BATCHES)

    def counters(self) -> dict:
        """What a status reader needs without opening the database."""
        return {"last_seq": self.last_seq, "committed_seq": self.committed_seq, "planned_end": self.planned_end,
                "recent_batches": [list(b) for b in self.recent_batches]}

    def add_files(self, files: list[tuple[str, S3File]], stats_delta: dict[str, int],
                  extra_meta: dict[str, bytes] | None = None) -> list[S3File]:
        """Give each (dedup key, file) the next seq, in one atomic write. Returns the numbered files."""
        wb = WriteBatch(raw_mode=True)
        out = []
        seq = self.last_seq
        for dedup_key, f in files:
            seq += 1
            rec = f.numbered(seq)
            wb.put(keys.seq(seq), rec.to_json())
            wb.put(keys.dedup(dedup_key), u64(seq))
            if rec.event_ms is not None:
                wb.put(keys.age(rec.event_ms, seq), dedup_key.encode())
            out.append(rec)
        wb.put(keys.meta(keys.LAST_SEQ), u64(seq))
        stats = self._merged_stats(stats_delta)
        wb.put(keys.meta(keys.STATS), json.dumps(stats, sort_keys=True).encode())
        for k, v in (extra_meta or {}).items():
            wb.put(keys.meta(k), v)
        self.db.write(wb)
        self.dirty = True
        self.last_seq, self.stats = seq, stats
        return out

    def record_batch(self, start: int, end: int, size: int | None = None) -> None:
        """Remember the batch that starts at `start`; a later plan for the same start replaces it. `size`:
        its bytes, when the caller has its records at hand."""
        if end > start and self.db.get(keys.batch(start)) != u64(end):
            self.db.put(keys.batch(start), u64(end))
            self.dirty = True
        if end > start:
            self._remember_size(start, end, size)
        self.planned_end = max(self.planned_end, end)

    def _remember_size(self, start: int, end: int, size: int | None) -> None:
        """Keep the batch's bytes for the metrics (read from its records unless given), once per batch."""
        if any(b[:2] == (start, end) for b in self.recent_batches):
            return
        if size is None:
            size = sum(r.size or 0 for r in self.iter_records(start + 1, end))
        kept = [b for b in self.recent_batches if b[0] != start]  # a later plan for the same start replaces it
        self.recent_batches.clear()
        self.recent_batches.extend(kept + [(start, end, size)])

    def move_files(self, moves: list[tuple[int, int]], dedup_key_of: Callable[[S3File], str]) -> None:
        """Renumber pending files, (from seq, to seq) each, in one write: their records, dedup entries and
        age entries move together. Only for files no plan has given Spark (latestFirst's reordering)."""
        if not moves:
            return
        if min(min(m) for m in moves) <= self.planned_end:
            raise StateError(f"cannot renumber files at or below offset {self.planned_end}: Spark may have them")
        wb = WriteBatch(raw_mode=True)
        moved = []
        for src, dst in moves:
            rec = self.record(src)
            if rec is None:
                raise StateError(f"the file at offset {src} is missing from the source state")
            key = self.db.get(keys.age(rec.event_ms, src)) if rec.event_ms is not None else None
            key = key.decode() if key is not None else dedup_key_of(rec)
            if self.seq_of(key) != src:
                raise StateError(f"the file at offset {src} ({rec.uri}) is not the one its dedup entry names")
            if rec.event_ms is not None:
                wb.delete(keys.age(rec.event_ms, src))  # every delete before any put: blocks may trade places
            moved.append((key, rec.numbered(dst)))
        for key, rec in moved:
            wb.put(keys.seq(rec.seq), rec.to_json())
            wb.put(keys.dedup(key), u64(rec.seq))
            if rec.event_ms is not None:
                wb.put(keys.age(rec.event_ms, rec.seq), key.encode())
        self.db.write(wb)
        self.dirty = True

    def set_committed(self, seq: int, now_ms: int, problems: list[dict] = ()) -> None:
        """Everything up to `seq` is in the sink; `problems` are the quarantine records of those batches."""
        if seq <= self.committed_seq:
            return
        wb = WriteBatch(raw_mode=True)
        for end in self.batch_ends(self.committed_seq, seq):
            wb.put(keys.commit(end), u64(now_ms))
        for r in problems:
            wb.put(keys.problem(int(r["seq"])), json.dumps(r, sort_keys=True).encode())
        wb.put(keys.meta(keys.COMMITTED), u64(seq))
        self.db.write(wb)
        self.committed_seq = seq
        self.planned_end = max(self.planned_end, seq)
        self.dirty = True

    def trim_older_than(self, cutoff_ms: int) -> int:
        """Forget committed files whose event time is before cutoff; cost is proportional to what goes."""
        wb = WriteBatch(raw_mode=True)
        n = 0
        for k, v in keys.scan(self.db, keys.AGE):
            event_ms, seq = keys.age_parts(k)
            if event_ms >= cutoff_ms:
                break
            if seq > self.committed_seq:
                continue
            wb.delete(k)
            wb.delete(keys.seq(seq))
            wb.delete(keys.problem(seq))
            if self.seq_of(v.decode()) == seq:
                wb.delete(keys.dedup(v.decode()))
            n += 1
        if n:
            self.db.write(wb)
            self.dirty = True
        return n

    def set_meta(self, name: str, value: bytes) -> None:
        self.db.put(keys.meta(name), value)
        self.dirty = True

    def note_stats(self, delta: dict[str, int]) -> None:
        """Count without a write of its own: saved with the next change that is (see save_stats)."""
        self.stats = self._merged_stats(delta)

    def save_stats(self) -> None:
        self.db.put(keys.meta(keys.STATS), json.dumps(self.stats, sort_keys=True).encode())

    def add_stats(self, delta: dict[str, int]) -> None:
        if any(delta.values()):
            self.stats = self._merged_stats(delta)
            self.save_stats()
            self.dirty = True

    def _merged_stats(self, delta: dict[str, int]) -> dict[str, int]:
        merged = dict(self.stats)
        for k, v in delta.items():
            merged[k] = merged.get(k, 0) + v
        return merged
