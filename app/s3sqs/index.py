"""The RocksDB file index: every announced file with its sequence number, and the planned batches.

Key layout (raw bytes; big-endian integers keep numeric order):
  d<dedup key>            -> seq          has this file been seen? (bucket+key, +etag with overwrites)
  s<seq>                  -> S3File JSON  the files of offsets (a, b], for planning and replay
  t<event ms><seq>        -> dedup key    age index, so trimming costs what it removes
  b<start seq>            -> end seq      planned batches, for reprocessing by batch id
  c<end seq>              -> ms           when the batch ending there was committed
  q<seq>                  -> record JSON  what became of a file that was not read cleanly (quarantine.py)
  m<name>                 -> value        counters: last seq, committed seq, stats

One writer: the Spark runner process. Durability comes from snapshots (snapshots.py). Readers (the job's
metrics, the state inspection in state_view.py) use the read methods on a private copy.
"""
from __future__ import annotations

import json
import struct
from collections import deque
from typing import Iterator

from rocksdict import Options, Rdict, WriteBatch

from .files import S3File

_U64 = struct.Struct(">Q")
# Planned batches whose size in bytes the snapshot manifest carries, for the job's per-batch metrics.
RECENT_BATCHES = 32


class StateError(RuntimeError):
    """The durable state is missing or inconsistent; the message says what and where."""


def u64(n: int) -> bytes:
    return _U64.pack(n)


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    # Every snapshot ships the MANIFEST; rolling it over keeps that cost flat instead of growing
    # with the number of snapshots ever taken.
    opts.set_max_manifest_file_size(64 << 10)
    return opts


class FileIndex:
    """Open RocksDB plus the counters cached from it."""

    def __init__(self, db: Rdict):
        self.db = db
        self.last_seq = self._meta_int(b"last_seq")
        self.committed_seq = self._meta_int(b"committed")
        self.stats: dict[str, int] = json.loads(self.db.get(b"mstats") or b"{}")
        self.planned_end = max(self._last_batch_end(), self.committed_seq)
        self.dirty = False  # written since the last snapshot
        # (start, end, bytes) of the last planned batches: in memory only, published with each snapshot.
        self.recent_batches: deque[tuple[int, int, int]] = deque(maxlen=RECENT_BATCHES)

    # -- reads --
    def seq_of(self, dedup_key: str) -> int | None:
        v = self.db.get(b"d" + dedup_key.encode())
        return None if v is None else _U64.unpack(v)[0]

    def records(self, first: int, last: int) -> list[S3File]:
        """Files with first <= seq <= last, in order."""
        out = []
        if last < first:
            return out
        for k, v in self.db.items(from_key=b"s" + u64(first)):
            if not k.startswith(b"s") or _U64.unpack(k[1:9])[0] > last:
                break
            out.append(S3File.from_json(v))
        return out

    def iter_sizes(self, first: int):
        for k, v in self.db.items(from_key=b"s" + u64(first)):
            if not k.startswith(b"s"):
                return
            yield S3File.from_json(v).size or 0

    def batches(self) -> list[tuple[int, int]]:
        """Planned batches as (start, end], in order; a batch id is its position."""
        out = []
        for k, v in self.db.items(from_key=b"b"):
            if not k.startswith(b"b"):
                break
            out.append((_U64.unpack(k[1:])[0], _U64.unpack(v)[0]))
        return out

    def _last_batch_end(self) -> int:
        for k, v in self.db.items(backwards=True, from_key=b"c"):
            return _U64.unpack(v)[0] if k.startswith(b"b") else 0
        return 0

    def batch_ends(self, after: int, upto: int) -> list[int]:
        """Ends of the planned batches that end in (after, upto]."""
        out = []
        for k, v in self.db.items(from_key=b"b" + u64(after)):
            if not k.startswith(b"b") or _U64.unpack(k[1:])[0] >= upto:
                break
            end = _U64.unpack(v)[0]
            if after < end <= upto:
                out.append(end)
        return out

    def files_of_batches(self, first: int, last: int) -> list[S3File]:
        """The files of planned batches first..last (batch ids, inclusive)."""
        batches = self.batches()
        if last >= len(batches):
            raise StateError(f"reprocessEndBatchId {last} is beyond the {len(batches)} batches in the source state")
        return [r for s, e in batches[first:last + 1] for r in self.records(s + 1, e)]

    def meta(self, name: str) -> bytes | None:
        return self.db.get(b"m" + name.encode())

    def counters(self) -> dict:
        """What a status reader needs without opening the database."""
        return {"last_seq": self.last_seq, "committed_seq": self.committed_seq, "planned_end": self.planned_end,
                "recent_batches": [list(b) for b in self.recent_batches]}

    # -- reads for inspection (state_view.py) --
    def iter_records(self, first: int = 1) -> Iterator[S3File]:
        """Every file from seq `first` on, in order, one at a time."""
        for k, v in self.db.items(from_key=b"s" + u64(first)):
            if not k.startswith(b"s"):
                return
            yield S3File.from_json(v)

    def record(self, seq: int) -> S3File | None:
        v = self.db.get(b"s" + u64(seq))
        return None if v is None else S3File.from_json(v)

    def seqs_since(self, event_ms: int) -> Iterator[int]:
        """Seqs of the files whose event is at or after `event_ms`, oldest event first (the age index)."""
        for k in self.db.keys(from_key=b"t" + u64(max(event_ms, 0))):
            if not k.startswith(b"t"):
                return
            yield _U64.unpack(k[9:17])[0]

    def dedup_entries(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        """(dedup key, seq) of every file whose dedup key starts with `prefix`, in key order."""
        start = b"d" + prefix.encode()
        for k, v in self.db.items(from_key=start):
            if not k.startswith(start):
                return
            yield k[1:].decode(), _U64.unpack(v)[0]

    def commit_times(self) -> dict[int, int]:
        """Batch end seq -> when the source recorded that batch as committed (ms)."""
        out = {}
        for k, v in self.db.items(from_key=b"c"):
            if not k.startswith(b"c"):
                break
            out[_U64.unpack(k[1:])[0]] = _U64.unpack(v)[0]
        return out

    def problems(self) -> dict[int, dict]:
        """Seq -> the record of each committed file that was not read cleanly (quarantine.py)."""
        out = {}
        for k, v in self.db.items(from_key=b"q"):
            if not k.startswith(b"q"):
                break
            out[_U64.unpack(k[1:])[0]] = json.loads(v)
        return out

    # -- writes --
    def add_files(self, files: list[tuple[str, S3File]], stats_delta: dict[str, int],
                  extra_meta: dict[str, bytes] | None = None) -> list[S3File]:
        """Give each (dedup key, file) the next seq, in one atomic write. Returns the numbered files."""
        wb = WriteBatch(raw_mode=True)
        out = []
        seq = self.last_seq
        for dedup_key, f in files:
            seq += 1
            rec = f.numbered(seq)
            wb.put(b"s" + u64(seq), rec.to_json())
            wb.put(b"d" + dedup_key.encode(), u64(seq))
            if rec.event_ms is not None:
                wb.put(b"t" + u64(max(rec.event_ms, 0)) + u64(seq), dedup_key.encode())
            out.append(rec)
        wb.put(b"mlast_seq", u64(seq))
        stats = self._merged_stats(stats_delta)
        wb.put(b"mstats", json.dumps(stats, sort_keys=True).encode())
        for k, v in (extra_meta or {}).items():
            wb.put(b"m" + k.encode(), v)
        self.db.write(wb)
        self.dirty = True
        self.last_seq = seq
        self.stats = stats
        return out

    def record_batch(self, start: int, end: int) -> None:
        """Remember the batch that starts at `start`; a later plan for the same start replaces it."""
        if end > start and self.db.get(b"b" + u64(start)) != u64(end):
            self.db.put(b"b" + u64(start), u64(end))
            self.dirty = True
        if end > start:
            self._remember_size(start, end)
        self.planned_end = max(self.planned_end, end)

    def _remember_size(self, start: int, end: int) -> None:
        """Keep the batch's bytes for the metrics; costs one read of its records, once per batch."""
        if any(b[:2] == (start, end) for b in self.recent_batches):
            return
        size = 0
        for k, v in self.db.items(from_key=b"s" + u64(start + 1)):
            if not k.startswith(b"s") or _U64.unpack(k[1:9])[0] > end:
                break
            size += json.loads(v).get("size") or 0
        kept = [b for b in self.recent_batches if b[0] != start]  # a later plan for the same start replaces it
        self.recent_batches.clear()
        self.recent_batches.extend(kept + [(start, end, size)])

    def set_committed(self, seq: int, now_ms: int, problems: list[dict] = ()) -> None:
        """Everything up to `seq` is in the sink; `problems` are the quarantine records of those batches."""
        if seq > self.committed_seq:
            wb = WriteBatch(raw_mode=True)
            for end in self.batch_ends(self.committed_seq, seq):
                wb.put(b"c" + u64(end), u64(now_ms))
            for r in problems:
                wb.put(b"q" + u64(int(r["seq"])), json.dumps(r, sort_keys=True).encode())
            wb.put(b"mcommitted", u64(seq))
            self.db.write(wb)
            self.committed_seq = seq
            self.planned_end = max(self.planned_end, seq)
            self.dirty = True

    def trim_older_than(self, cutoff_ms: int) -> int:
        """Forget committed files whose event time is before cutoff; cost is proportional to what goes."""
        wb = WriteBatch(raw_mode=True)
        n = 0
        for k, v in self.db.items(from_key=b"t"):
            if not k.startswith(b"t") or _U64.unpack(k[1:9])[0] >= cutoff_ms:
                break
            seq = _U64.unpack(k[9:17])[0]
            if seq > self.committed_seq:
                continue
            wb.delete(k)
            wb.delete(b"s" + u64(seq))
            wb.delete(b"q" + u64(seq))
            if self.seq_of(v.decode()) == seq:
                wb.delete(b"d" + v)
            n += 1
        if n:
            self.db.write(wb)
            self.dirty = True
        return n

    def set_meta(self, name: str, value: bytes) -> None:
        self.db.put(b"m" + name.encode(), value)
        self.dirty = True

    def note_stats(self, delta: dict[str, int]) -> None:
        """Count without a write of its own: saved with the next change that is (see save_stats)."""
        self.stats = self._merged_stats(delta)

    def save_stats(self) -> None:
        self.db.put(b"mstats", json.dumps(self.stats, sort_keys=True).encode())

    def add_stats(self, delta: dict[str, int]) -> None:
        if any(delta.values()):
            self.stats = self._merged_stats(delta)
            self.db.put(b"mstats", json.dumps(self.stats, sort_keys=True).encode())
            self.dirty = True

    def _meta_int(self, name: bytes) -> int:
        v = self.db.get(b"m" + name)
        return 0 if v is None else _U64.unpack(v)[0]

    def _merged_stats(self, delta: dict[str, int]) -> dict[str, int]:
        merged = dict(self.stats)
        for k, v in delta.items():
            merged[k] = merged.get(k, 0) + v
        return merged
