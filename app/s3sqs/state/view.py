"""The source's state as people and notebooks want to see it: every file it tracks, in which batch, and what
became of it.

Read-only and safe while the job runs: `open_state` copies the newest durable version into a private
directory (snapshots.private_copy) and never writes to the state location. From a notebook:

    from s3sqs.state_view import files_table, state_summary
    files_table(checkpoint="s3://my-checkpoints/checkpoints/ingest", status="quarantined").to_pandas()

A file's status, in the order it moves through them:
- pending: recorded in the index, not yet in a planned batch;
- planned: in a planned batch that is not known to be in the sink yet;
- committed: its batch is in the sink (the source recorded the commit, or Spark's commit log says so);
- quarantined, missing, malformed_rows: its batch is in the sink, but the file was not read cleanly: set
  aside (its record and copy are in the quarantine location), gone before it was read, or read with rows
  that did not parse;
- new_columns: its batch is in the sink, and the file had columns the schema lacks (schemaEvolutionMode
  rescue or none: kept in the rescued-data column when the schema declares it, otherwise left out).
The source records a commit one batch late (it learns of it when it plans the next batch), so with the
checkpoint at hand Spark's own commit log decides what is in the sink.
"""
from __future__ import annotations

import bisect
import json
import logging
import os
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Callable, Iterable, Iterator
from urllib.parse import urlparse

import pyarrow as pa

from ..core import layout
from ..core import aws
from ..core.endpoint import Endpoint
from ..core.errors import StateError, UsageError
from ..core.files import INVENTORIED, S3File, key_base, key_variants_prefix
from ..core.retry import retry_call
from ..core.units import to_ms
from ..core.vocabulary import FileStatus
from . import quarantine
from .checkpoint import committed_end
from .index import IndexReader
from .snapshots import Snapshots, private_copy
from .store import open_store

PENDING, PLANNED, COMMITTED = FileStatus.PENDING, FileStatus.PLANNED, FileStatus.COMMITTED
STATUSES = tuple(s.value for s in FileStatus)
NOTIFICATION, LISTING, INVENTORY = "notification", "listing", "inventory"
PROGRESS_EVERY = 50_000      # files read between two progress calls
RESTORE_ATTEMPTS = 3         # the job prunes old versions; a copy that loses the race starts again
log = logging.getLogger("s3sqs.state")


class StateViewError(UsageError):
    """What was asked of the state cannot be answered (no state there, no such batch); the message says why."""


@dataclass(frozen=True)
class FileState:
    seq: int
    batch_id: int | None
    status: str
    bucket: str
    key: str
    size: int | None
    event_ms: int | None
    event_name: str | None
    origin: str                    # notification (a message announced it) or listing (the backfill found it)
    committed_ms: int | None       # when the source recorded its batch as committed
    error: str | None = None       # why it was not read cleanly
    quarantine_copy: str | None = None
    etag: str | None = None
    version_id: str | None = None
    scheme: str = "s3"

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"

    def as_dict(self) -> dict:
        return {**asdict(self), "uri": self.uri}


@dataclass(frozen=True)
class Batch:
    id: int
    start: int                     # offsets (start, end]
    end: int
    committed_ms: int | None

    @property
    def files(self) -> int:
        return self.end - self.start


# -- pure decisions ----------------------------------------------------------------------------------------

def problem_text(problem: dict | None) -> str | None:
    """Why a file was not read cleanly: the error, the first malformed row's reason, its new columns."""
    if not problem:
        return None
    parts = [problem.get("error"), problem.get("reason")]
    if problem.get("new_columns"):
        parts.append("new columns: " + ", ".join(problem["new_columns"]))
    return "; ".join(p for p in parts if p) or None


def file_status(seq: int, planned: bool, committed_through: int, problem: dict | None) -> str:
    """A file's status from where it stands: the sink holds every seq up to `committed_through`."""
    if seq <= committed_through:
        return str(problem.get("status") or COMMITTED) if problem else COMMITTED
    return PLANNED if planned else PENDING


def origin(f: S3File) -> str:
    return LISTING if f.listed else INVENTORY if f.event_name == INVENTORIED else NOTIFICATION


def key_query(text: str) -> tuple[str | None, str]:
    """`s3://bucket/key` -> (bucket, key); `file:///path` -> ("", path); a bare key -> (None, key): any bucket."""
    if text.startswith("s3://"):
        u = urlparse(text)
        if not u.netloc or not u.path.strip("/"):
            raise StateViewError(f"{text!r} names no object; give s3://bucket/key, or the key alone")
        return u.netloc, u.path[1:]
    if text.startswith("file://"):
        return "", urlparse(text).path.lstrip("/")
    if "://" in text:
        raise StateViewError(f"{text!r}: only s3:// and file:// URIs, or a bare key, can be looked up")
    if not text.strip():
        raise StateViewError("the key to look up is empty")
    return None, text


def locations(state_location: str | None, checkpoint: str | None,
              quarantine_location: str | None) -> tuple[str, str | None, str]:
    """(state, checkpoint, quarantine) locations, as the job lays them out under its checkpoint: state in
    CHECKPOINT/source-state and quarantine in CHECKPOINT/quarantine unless given; without a checkpoint the
    source's own default, STATE/quarantine."""
    if not state_location and not checkpoint:
        raise StateViewError("give the checkpoint (its source-state is read) or the state location")
    ck = checkpoint.rstrip("/") if checkpoint else None
    state = (state_location or layout.state_location(ck)).rstrip("/")
    q = quarantine_location or layout.quarantine_location(ck or state)
    return state, ck, q.rstrip("/")


class BatchIndex:
    """The planned batches, for finding a file's batch by its seq."""

    def __init__(self, ranges: list[tuple[int, int]], commit_times: dict[int, int]):
        self.batches = [Batch(i, s, e, commit_times.get(e)) for i, (s, e) in enumerate(ranges)]
        self._starts = [b.start for b in self.batches]

    def of(self, seq: int) -> Batch | None:
        i = bisect.bisect_left(self._starts, seq) - 1  # the last batch starting before seq
        if i >= 0 and self.batches[i].start < seq <= self.batches[i].end:
            return self.batches[i]
        return None

    def get(self, batch_id: int) -> Batch:
        if not 0 <= batch_id < len(self.batches):
            have = f"batches 0..{len(self.batches) - 1}" if self.batches else "no batch yet"
            raise StateViewError(f"batch {batch_id} is not in the source state, which holds {have}")
        return self.batches[batch_id]


# -- the view ----------------------------------------------------------------------------------------------

class StateView:
    """Files, batches and counters of one opened index. `sink_committed` is the end offset of the newest
    batch Spark committed (from the checkpoint), `late_problems` the quarantine records of batches Spark
    committed and the source has not acknowledged yet."""

    def __init__(self, index: IndexReader, *, sink_committed: int | None = None,
                 late_problems: dict[int, dict] | None = None, version: int = 0, written_at: float | None = None,
                 state_bytes: int | None = None, progress: Callable[[int], None] | None = None):
        self.index = index
        self.batches = BatchIndex(index.batches(), index.commit_times())
        self.sink_committed = sink_committed
        self.committed_through = max(index.committed_seq, sink_committed or 0)
        self.problems = {**index.problems(), **(late_problems or {})}
        self.version, self.written_at, self.state_bytes = version, written_at, state_bytes
        self._progress = progress

    def state_of(self, f: S3File) -> FileState:
        batch = self.batches.of(f.seq)
        problem = self.problems.get(f.seq) if f.seq <= self.committed_through else None
        return FileState(
            seq=f.seq, batch_id=batch.id if batch else None,
            status=file_status(f.seq, batch is not None or f.seq <= self.index.planned_end, self.committed_through,
                               problem),
            bucket=f.bucket, key=f.key, size=f.size, event_ms=f.event_ms, event_name=f.event_name,
            origin=origin(f), committed_ms=batch.committed_ms if batch else None,
            error=problem_text(problem), quarantine_copy=(problem or {}).get("copy") or None,
            etag=f.etag, version_id=f.version_id, scheme=f.scheme)

    def files(self, *, batch: int | None = None, since_ms: int | None = None,
              status: str | None = None) -> Iterator[FileState]:
        """Files in seq order; of one batch; or whose event is at or after `since_ms`, oldest event first
        (files with no event time have none to compare). `status` keeps only files in that status."""
        if status is not None and status not in STATUSES:
            raise StateViewError(f"unknown status {status!r}; one of: {', '.join(STATUSES)}")
        if batch is not None:
            b = self.batches.get(batch)
            records: Iterable[S3File] = self._until(self.index.iter_records(b.start + 1), b.end)
        elif since_ms is not None:
            records = (r for r in map(self.index.record, self.index.seqs_since(since_ms)) if r is not None)
        else:
            records = self.index.iter_records(1)
        for n, r in enumerate(records, 1):
            if self._progress and n % PROGRESS_EVERY == 0:
                self._progress(n)
            s = self.state_of(r)
            if status is None or s.status == status:
                yield s

    def lookup(self, key: str) -> list[FileState]:
        """Every record of a key (several with allowOverwrites, or once re-queued by a reprocess), by seq."""
        bucket, k = key_query(key)
        if bucket is not None:
            base = f"{bucket}/{k}"
            entries = self.index.dedup_entries(base)
            matches = [seq for dk, seq in entries if dk == base or dk.startswith(key_variants_prefix(base))]
        else:  # any bucket: the dedup keys start with it, so every key is read
            matches = []
            for n, (dk, seq) in enumerate(self.index.dedup_entries(), 1):
                if self._progress and n % PROGRESS_EVERY == 0:
                    self._progress(n)
                if key_base(dk).split("/", 1)[-1] == k:
                    matches.append(seq)
        return [self.state_of(r) for r in map(self.index.record, sorted(set(matches))) if r is not None]

    def summary(self) -> dict:
        """Counts by status, the batches, the source's counters and the state's size; reads every record."""
        by_status = dict.fromkeys(STATUSES, 0)
        tracked = size = 0
        oldest = newest = None
        for s in self.files():
            tracked += 1
            by_status[s.status] += 1
            size += s.size or 0
            if s.event_ms is not None:
                oldest = s.event_ms if oldest is None else min(oldest, s.event_ms)
                newest = s.event_ms if newest is None else max(newest, s.event_ms)
        last = self.batches.batches[-1] if self.batches.batches else None
        return {
            "state_version": self.version, "state_written_at": self.written_at, "state_bytes": self.state_bytes,
            "files_tracked": tracked, "bytes_tracked": size, "by_status": by_status,
            "oldest_event_ms": oldest, "newest_event_ms": newest,
            "last_seq": self.index.last_seq, "source_committed_seq": self.index.committed_seq,
            "sink_committed_seq": self.sink_committed, "batches": len(self.batches.batches),
            "last_batch": None if last is None else {**asdict(last), "files": last.files},
            "counters": dict(sorted(self.index.stats.items())),
        }

    @staticmethod
    def _until(records: Iterator[S3File], last: int) -> Iterator[S3File]:
        for r in records:
            if r.seq > last:
                return
            yield r


# -- opening it --------------------------------------------------------------------------------------------

@contextmanager
def open_state(state_location: str | None = None, *, checkpoint: str | None = None,
               quarantine_location: str | None = None, s3_client_factory=None,
               progress: Callable[[str], None] | None = None) -> Iterator[StateView]:
    """The newest durable version of the state, opened read-only in a private directory, with Spark's commit
    log when the checkpoint is given. `progress` receives a line now and then on long reads."""
    state, ck, q = locations(state_location, checkpoint, quarantine_location)
    factory = s3_client_factory or aws.lazy_client("s3", Endpoint(max_attempts=11))
    say = progress or (lambda _msg: None)
    snaps = Snapshots(open_store(state, factory))
    # Spark's commit log first: the state copied after it is at least as new, so it holds every file the
    # log says is in the sink (the source makes a plan durable before Spark logs it).
    try:
        sink = committed_end(open_store(ck, factory))[1] if ck else None
    except ValueError as e:
        raise StateViewError(f"{ck} is not the checkpoint of an s3-sqs query: {e}") from e
    with ExitStack() as stack:
        index = _restore(snaps, stack, state, say)
        manifest = json.loads(snaps.store.get_bytes(f"versions/{snaps.version:012d}.json") or b"{}")
        late: dict[int, dict] = {}
        if sink is not None and sink > index.committed_seq:
            qstore = open_store(q, factory)
            for end in index.batch_ends(index.committed_seq, sink):
                late.update({int(r["seq"]): r for r in quarantine.read_records(qstore, end)})
        yield StateView(index, sink_committed=sink, late_problems=late, version=snaps.version,
                        written_at=manifest.get("created"), state_bytes=_dir_bytes(index.db.path()),
                        progress=lambda n: say(f"... {n:,} files read"))


def _restore(snaps: Snapshots, stack: ExitStack, where: str, say: Callable[[str], None]) -> IndexReader:
    copying: list[int] = []

    def copy() -> IndexReader:
        version = snaps.latest_version()
        if version == 0:
            raise StateViewError(f"no source state in {where}: it has no versions/ manifest. Check the location "
                                 "(the job keeps it in CHECKPOINT/source-state), or wait for the first batch")
        manifest = json.loads(snaps.store.get_bytes(f"versions/{version:012d}.json") or b"{}")
        say(f"copying state version {version} ({len(manifest.get('sst', []))} data files) from {where}")
        copying.append(version)
        return stack.enter_context(private_copy(snaps))

    def superseded(e: BaseException) -> bool:
        # The job prunes superseded versions; losing that race is worth another try, anything else is not.
        if not isinstance(e, (OSError, StateError, _client_error())) or snaps.latest_version() <= copying[-1]:
            return False
        say(f"version {copying[-1]} was superseded while it was copied ({type(e).__name__}); copying the newest")
        return True
    return retry_call(copy, what=f"copying the state from {where}", attempts=RESTORE_ATTEMPTS, retryable=superseded,
                      log=log, base_seconds=0)


def _client_error() -> type:
    try:
        from botocore.exceptions import ClientError
    except ImportError:  # local state needs no botocore
        return OSError
    return ClientError


def _dir_bytes(path: str) -> int:
    return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())


# -- for notebooks: Arrow (and pandas, with .to_pandas()) ---------------------------------------------------

_TIME = pa.timestamp("ms", tz="UTC")
TABLE_SCHEMA = pa.schema([
    ("seq", pa.int64()), ("batch_id", pa.int64()), ("status", pa.string()), ("uri", pa.string()),
    ("bucket", pa.string()), ("key", pa.string()), ("size", pa.int64()), ("event_time", _TIME),
    ("event_name", pa.string()), ("origin", pa.string()), ("committed_at", _TIME), ("error", pa.string()),
    ("quarantine_copy", pa.string()), ("etag", pa.string()), ("version_id", pa.string()),
])


def to_table(states: Iterable[FileState]) -> pa.Table:
    cols: dict[str, list] = {f.name: [] for f in TABLE_SCHEMA}
    for s in states:
        for name, value in (("seq", s.seq), ("batch_id", s.batch_id), ("status", s.status), ("uri", s.uri),
                            ("bucket", s.bucket), ("key", s.key), ("size", s.size), ("event_time", s.event_ms),
                            ("event_name", s.event_name), ("origin", s.origin), ("committed_at", s.committed_ms),
                            ("error", s.error), ("quarantine_copy", s.quarantine_copy), ("etag", s.etag),
                            ("version_id", s.version_id)):
            cols[name].append(value)
    return pa.Table.from_pydict(cols, schema=TABLE_SCHEMA)


def files_table(state_location: str | None = None, *, checkpoint: str | None = None, batch: int | None = None,
                since: datetime | int | None = None, status: str | None = None, endpoint_url: str | None = None,
                region: str | None = None) -> pa.Table:
    """One row per tracked file (see the module docstring for the statuses). `since`: a datetime or epoch ms."""
    since_ms = to_ms(since) if isinstance(since, datetime) else since
    with open_state(state_location, checkpoint=checkpoint, s3_client_factory=_s3(endpoint_url, region)) as view:
        return to_table(view.files(batch=batch, since_ms=since_ms, status=status))


def state_summary(state_location: str | None = None, *, checkpoint: str | None = None,
                  endpoint_url: str | None = None, region: str | None = None) -> dict:
    with open_state(state_location, checkpoint=checkpoint, s3_client_factory=_s3(endpoint_url, region)) as view:
        return view.summary()


def _s3(endpoint_url: str | None, region: str | None):
    return aws.lazy_client("s3", Endpoint(endpoint_url, region, max_attempts=11))
