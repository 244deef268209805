"""Durable, incremental snapshots of the RocksDB index in the state location.

They follow Spark's RocksDB state store: SST files are immutable, so each is uploaded once under sst/;
a version adds only the new SSTs plus the small MANIFEST/CURRENT/OPTIONS files, and a JSON manifest
written last makes the version visible. Nothing scales with the files tracked. The manifest also
carries the index's counters, so a status reader needs no database.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rocksdict import Checkpoint, Rdict

from ..core.errors import StateError
from ..core.layout import SNAPSHOT_VERSIONS_DIR as VERSIONS, SST_DIR as SST
from .index import FileIndex, IndexReader, db_options
from .store import Store

log = logging.getLogger("s3sqs.state")

KEEP_VERSIONS = 5
PRUNE_EVERY = 10
UPLOAD_THREADS = 8  # a version's files uploaded at once: a new SST or two and a handful of small files
LOCAL_ROOT = Path(tempfile.gettempdir()) / "s3sqs-state"


@dataclass(frozen=True)
class SnapshotStats:
    version: int
    files_uploaded: int
    bytes_uploaded: int
    seconds: float


class Snapshots:
    """Incremental snapshots of a RocksDB directory into a Store."""

    def __init__(self, store: Store):
        self.store = store
        self.version = 0
        self._uploaded: set[str] = set()  # sst names known to be in the store
        self._pool: ThreadPoolExecutor | None = None

    def _uploader(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=UPLOAD_THREADS, thread_name_prefix="s3sqs-snapshot")
        return self._pool

    def manifests(self) -> list[str]:
        return sorted(n for n in self.store.list(VERSIONS) if re.fullmatch(rf"{VERSIONS}/\d{{12}}\.json", n))

    def latest_version(self) -> int:
        return max((int(Path(n).stem) for n in self.manifests()), default=0)

    def restore(self, local_dir: Path) -> int:
        """Materialise the newest version into local_dir; 0 means no state yet."""
        version = self.latest_version()
        local_dir.mkdir(parents=True, exist_ok=True)
        if version == 0:
            return 0
        raw = self.store.get_bytes(f"{VERSIONS}/{version:012d}.json")
        if raw is None:
            raise StateError(f"state version {version} has no manifest in the state location")
        manifest = json.loads(raw)
        for name in manifest["sst"]:
            self.store.get_file(f"{SST}/{name}", local_dir / name)
            self._uploaded.add(name)
        for name in manifest["small"]:
            self.store.get_file(f"{VERSIONS}/{version:012d}/{name}", local_dir / name)
        self.version = version
        return version

    def newest_manifest(self) -> dict | None:
        version = self.latest_version()
        if version == 0:
            return None
        return json.loads(self.store.get_bytes(f"{VERSIONS}/{version:012d}.json") or b"{}")

    def save(self, db: Rdict, work_root: Path, status: dict | None = None) -> SnapshotStats:
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
        new_sst = [name for name in sst if name not in self._uploaded]
        uploads = [(ck / name, f"{SST}/{name}") for name in new_sst] + \
                  [(ck / name, f"{VERSIONS}/{version:012d}/{name}") for name in small]
        # At once: each is a PUT (on S3) or a write and an fsync (locally), and a version has several.
        for _ in self._uploader().map(lambda u: self.store.put_file(*u), uploads):
            pass  # (an upload's error is raised here, before the manifest)
        self._uploaded.update(new_sst)
        n, size = len(uploads), sum(local.stat().st_size for local, _ in uploads)
        manifest = json.dumps({"version": version, "sst": sst, "small": small, "created": time.time(),
                               **(status or {})}).encode()
        self.store.put_bytes(manifest, f"{VERSIONS}/{version:012d}.json")  # the commit point
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
        dead_sst = [n for n in self.store.list(SST) if Path(n).name not in live]
        doomed = list(dead_sst)
        for name in old:
            v = Path(name).stem
            doomed.extend(self.store.list(f"{VERSIONS}/{v}"))
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


def open_index(snapshots: Snapshots) -> tuple[FileIndex, Path]:
    """Restore the newest snapshot into a fresh working dir and open it."""
    work = local_work_dir()
    db_dir = work / "db"
    version = snapshots.restore(db_dir)
    db = Rdict(str(db_dir), db_options())
    log.info("s3-sqs state: restored version %d into %s", version, db_dir)
    return FileIndex(db), work


@contextmanager
def private_copy(snapshots: Snapshots):
    """The newest durable version, opened in a private directory: read it while the source runs."""
    work = local_work_dir()
    try:
        snapshots.restore(work / "db")
        db = Rdict(str(work / "db"), db_options())
        try:
            yield IndexReader(db)
        finally:
            db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_status(snapshots: Snapshots) -> dict:
    """The newest durable version's counters (last_seq, committed_seq, planned_end), stats, the sizes of
    its last planned batches ([start, end, bytes]) and whether a backfill was running; all zero before the
    first snapshot. Reads one small
    file: safe and cheap while the source runs."""
    manifest = snapshots.newest_manifest() or {}
    return {"version": manifest.get("version", 0), **{k: manifest.get(k, 0) for k in
            ("last_seq", "committed_seq", "planned_end")}, "stats": manifest.get("stats", {}),
            "recent_batches": manifest.get("recent_batches", []), "backfilling": manifest.get("backfilling", False)}
