"""The RocksDB file index and its durable, incremental snapshots in the state location.

Key layout (raw bytes; big-endian integers keep numeric order):
  d<dedup key>            -> seq             has this file been seen? (bucket+key, +etag with overwrites)
  s<seq>                  -> FileRecord JSON the files of offsets (a, b], for planning and replay
  t<event ms><seq>        -> dedup key       age index, so trimming costs what it removes
  b<start seq>            -> end seq         planned batches, for reprocessing by batch id
  m<name>                 -> value           counters: last seq, committed seq, stats

Snapshots follow Spark's RocksDB state store: SST files are immutable, so each is uploaded once
under sst/; a version adds only the new SSTs plus the small MANIFEST/CURRENT/OPTIONS files, and a
JSON manifest written last makes the version visible. Nothing scales with the files tracked.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import struct
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rocksdict import Checkpoint, Options, Rdict, WriteBatch

from .storage import Store

log = logging.getLogger("s3sqs.state")

_U64 = struct.Struct(">Q")
KEEP_VERSIONS = 5
PRUNE_EVERY = 10
LOCAL_ROOT = Path(tempfile.gettempdir()) / "s3sqs-state"


class StateError(RuntimeError):
    """The durable state is missing or inconsistent; the message says what and where."""


@dataclass(frozen=True)
class FileRecord:
    seq: int
    bucket: str
    key: str
    size: int | None
    etag: str | None
    version_id: str | None
    event_ms: int | None

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def fields(self) -> dict:
        """Everything but the seq, to record the same file again under a new one."""
        d = asdict(self)
        del d["seq"]
        return d

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @staticmethod
    def from_json(raw: bytes) -> "FileRecord":
        return FileRecord(**json.loads(raw))


@dataclass(frozen=True)
class SnapshotStats:
    version: int
    files_uploaded: int
    bytes_uploaded: int
    seconds: float


def u64(n: int) -> bytes:
    return _U64.pack(n)


class FileIndex:
    """Open RocksDB plus the counters cached from it. One writer: the Spark runner process."""

    def __init__(self, db: Rdict):
        self.db = db
        self.last_seq = self._meta_int(b"last_seq")
        self.committed_seq = self._meta_int(b"committed")
        self.stats: dict[str, int] = json.loads(self.db.get(b"mstats") or b"{}")
        self.dirty = False  # written since the last snapshot

    # -- reads --
    def seq_of(self, dedup_key: str) -> int | None:
        v = self.db.get(b"d" + dedup_key.encode())
        return None if v is None else _U64.unpack(v)[0]

    def records(self, first: int, last: int) -> list[FileRecord]:
        """Files with first <= seq <= last, in order."""
        out = []
        if last < first:
            return out
        for k, v in self.db.items(from_key=b"s" + u64(first)):
            if not k.startswith(b"s") or _U64.unpack(k[1:9])[0] > last:
                break
            out.append(FileRecord.from_json(v))
        return out

    def iter_sizes(self, first: int):
        for k, v in self.db.items(from_key=b"s" + u64(first)):
            if not k.startswith(b"s"):
                return
            yield FileRecord.from_json(v).size or 0

    def batches(self) -> list[tuple[int, int]]:
        """Planned batches as (start, end], in order; a batch id is its position."""
        out = []
        for k, v in self.db.items(from_key=b"b"):
            if not k.startswith(b"b"):
                break
            out.append((_U64.unpack(k[1:])[0], _U64.unpack(v)[0]))
        return out

    def meta(self, name: str) -> bytes | None:
        return self.db.get(b"m" + name.encode())

    # -- writes --
    def add_files(self, files: list[tuple[str, dict]], stats_delta: dict[str, int], extra_meta=None) -> list[int]:
        """Give each (dedup key, file fields) the next seq, in one atomic write. Returns the seqs."""
        wb = WriteBatch(raw_mode=True)
        seqs = []
        seq = self.last_seq
        for dedup_key, fields in files:
            seq += 1
            rec = FileRecord(seq=seq, **fields)
            wb.put(b"s" + u64(seq), rec.to_json())
            wb.put(b"d" + dedup_key.encode(), u64(seq))
            if rec.event_ms is not None:
                wb.put(b"t" + u64(max(rec.event_ms, 0)) + u64(seq), dedup_key.encode())
            seqs.append(seq)
        wb.put(b"mlast_seq", u64(seq))
        stats = self._merged_stats(stats_delta)
        wb.put(b"mstats", json.dumps(stats, sort_keys=True).encode())
        for k, v in (extra_meta or {}).items():
            wb.put(b"m" + k.encode(), v)
        self.db.write(wb)
        self.dirty = True
        self.last_seq = seq
        self.stats = stats
        return seqs

    def record_batch(self, start: int, end: int) -> None:
        """Remember the batch that starts at `start`; a later plan for the same start replaces it."""
        if end > start and self.db.get(b"b" + u64(start)) != u64(end):
            self.db.put(b"b" + u64(start), u64(end))
            self.dirty = True

    def set_committed(self, seq: int) -> None:
        if seq > self.committed_seq:
            self.db.put(b"mcommitted", u64(seq))
            self.committed_seq = seq
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
            if self.seq_of(v.decode()) == seq:
                wb.delete(b"d" + v)
            n += 1
        if n:
            self.db.write(wb)
            self.dirty = True
        return n

    def _meta_int(self, name: bytes) -> int:
        v = self.db.get(b"m" + name)
        return 0 if v is None else _U64.unpack(v)[0]

    def _merged_stats(self, delta: dict[str, int]) -> dict[str, int]:
        merged = dict(self.stats)
        for k, v in delta.items():
            merged[k] = merged.get(k, 0) + v
        return merged

    def add_stats(self, delta: dict[str, int]) -> None:
        if any(delta.values()):
            self.stats = self._merged_stats(delta)
            self.db.put(b"mstats", json.dumps(self.stats, sort_keys=True).encode())
            self.dirty = True


class Snapshots:
    """Incremental snapshots of a RocksDB directory into a Store."""

    def __init__(self, store: Store):
        self.store = store
        self.version = 0
        self._uploaded: set[str] = set()  # sst names known to be in the store

    def manifests(self) -> list[str]:
        return sorted(n for n in self.store.list("versions") if re.fullmatch(r"versions/\d{12}\.json", n))

    def latest_version(self) -> int:
        return max((int(Path(n).stem) for n in self.manifests()), default=0)

    def restore(self, local_dir: Path, version: int | None = None) -> int:
        """Materialise a version (default: the newest) into local_dir; 0 means no state yet."""
        version = self.latest_version() if version is None else version
        local_dir.mkdir(parents=True, exist_ok=True)
        if version == 0:
            return 0
        raw = self.store.get_bytes(f"versions/{version:012d}.json")
        if raw is None:
            raise StateError(f"state version {version} has no manifest in the state location")
        manifest = json.loads(raw)
        for name in manifest["sst"]:
            self.store.get_file(f"sst/{name}", local_dir / name)
            self._uploaded.add(name)
        for name in manifest["small"]:
            self.store.get_file(f"versions/{version:012d}/{name}", local_dir / name)
        self.version = version
        return version

    def save(self, db: Rdict, work_root: Path) -> SnapshotStats:
        """Flush, checkpoint (hard links), upload what is new, then publish the manifest."""
        t0 = time.perf_counter()
        db.flush(True)
        ck = work_root / f"checkpoint-{self.version + 1}"
        shutil.rmtree(ck, ignore_errors=True)
        Checkpoint(db).create_checkpoint(str(ck))
        version = self.version + 1
        files = sorted(os.listdir(ck))
        sst = [f for f in files if f.endswith(".sst")]
        small = [f for f in files if not f.endswith(".sst")]
        n = size = 0
        for name in sst:
            if name not in self._uploaded:
                self.store.put_file(ck / name, f"sst/{name}")
                self._uploaded.add(name)
                n += 1
                size += (ck / name).stat().st_size
        for name in small:
            self.store.put_file(ck / name, f"versions/{version:012d}/{name}")
            n += 1
            size += (ck / name).stat().st_size
        manifest = json.dumps({"version": version, "sst": sst, "small": small, "created": time.time()}).encode()
        self.store.put_bytes(manifest, f"versions/{version:012d}.json")  # the commit point
        shutil.rmtree(ck, ignore_errors=True)
        self.version = version
        if version % PRUNE_EVERY == 0:
            self.prune()
        return SnapshotStats(version, n, size + len(manifest), time.perf_counter() - t0)

    def prune(self) -> None:
        """Drop versions older than the last KEEP_VERSIONS and the SSTs only they used."""
        manifests = self.manifests()
        old, keep = manifests[:-KEEP_VERSIONS], manifests[-KEEP_VERSIONS:]
        if not old:
            return
        live = set()
        for name in keep:
            live.update(json.loads(self.store.get_bytes(name) or b"{}").get("sst", []))
        dead_sst = [n for n in self.store.list("sst") if Path(n).name not in live]
        doomed = list(dead_sst)
        for name in old:
            v = Path(name).stem
            doomed.extend(self.store.list(f"versions/{v}"))
            doomed.append(name)
        self.store.delete(doomed)
        self._uploaded -= {Path(n).name for n in dead_sst}


def local_work_dir() -> Path:
    """A private working directory; ones left by dead processes are cleared first."""
    LOCAL_ROOT.mkdir(parents=True, exist_ok=True)
    for d in LOCAL_ROOT.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=LOCAL_ROOT))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def db_options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    # Every snapshot ships the MANIFEST; rolling it over keeps that cost flat instead of growing
    # with the number of snapshots ever taken.
    opts.set_max_manifest_file_size(64 << 10)
    return opts


def open_index(snapshots: Snapshots) -> tuple[FileIndex, Path]:
    """Restore the newest snapshot into a fresh working dir and open it."""
    work = local_work_dir()
    db_dir = work / "db"
    version = snapshots.restore(db_dir)
    db = Rdict(str(db_dir), db_options())
    log.info("s3-sqs state: restored version %d into %s", version, db_dir)
    return FileIndex(db), work


def read_stats(snapshots: Snapshots) -> dict:
    """Counters and offsets of the newest snapshot, for reports; opens a private copy."""
    work = local_work_dir()
    try:
        version = snapshots.restore(work / "db")
        if version == 0:
            return {"version": 0}
        db = Rdict(str(work / "db"), db_options())
        try:
            idx = FileIndex(db)
            return {"version": version, "last_seq": idx.last_seq, "committed_seq": idx.committed_seq,
                    "batches": len(idx.batches()), **idx.stats}
        finally:
            db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
