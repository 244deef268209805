"""What one micro-batch did, in numbers: from Spark's query progress and the source's durable status, to
metric values and a CloudWatch embedded metric format (EMF) document. Pure: the job reads, this decides.

Where the numbers come from:
- files in: the batch's offsets in Spark's progress (a file is one seq); rows in and the batch time: Spark's
  progress; bytes in: the source's status, which carries the size of its last planned batches;
- duplicates, filtered (too old or not matching pathGlobFilter), unparseable messages, planning and snapshot
  time: the source's cumulative counters, as the difference between two status reads, so they cover what
  the source did since the previous report (its intake runs ahead of batches, in the background);
- quarantined and missing files, malformed rows: the batch's own quarantine records;
- backlog: the queue's visible, in-flight and delayed messages (GetQueueAttributes), and files the source
  recorded but has not planned yet. Messages are deleted once their files are durable in the index, so
  the queue alone under-counts the backlog. SQS has no attribute for the age of the oldest message: that
  is CloudWatch's own ApproximateAgeOfOldestMessage, which the stack alarms on and charts.

Why EMF and not PutMetricData: EMR Serverless already ships the driver's stdout to the consumer's own log
group, and CloudWatch Logs turns an EMF line there into metrics. So reporting costs no API call in the
batch loop (no latency, throttling or failure path there), the job role needs no new permission
(PutMetricData cannot be scoped to a resource, only to a namespace), and the numbers stay readable in the
log next to the batch line. The price: metrics exist only for runs that log to CloudWatch (submit-job
always configures it), and they appear after CloudWatch Logs has processed the line.

The namespace, metric names and dimension are read by the CDK stack for its alarms and dashboards, so
they have their one owner here.
"""
from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass

from ..core import counters
from ..core.counters import Stat
from ..core.vocabulary import FileStatus

NAMESPACE = "S3SqsStreaming"
DIMENSION = "QueueName"  # the consumer's queue name: the dimension SQS's own metrics use too

# Metric name -> (unit, attribute of BatchMetrics). One EMF document per batch carries them all.
FILES_IN, BYTES_IN, ROWS_IN = "FilesIn", "BytesIn", "RowsIn"
DUPLICATES, FILTERED, UNPARSEABLE = "DuplicatesIgnored", "FilesFiltered", "MessagesUnparseable"
QUARANTINED, MISSING, MALFORMED = "FilesQuarantined", "FilesMissing", "RowsMalformed"
NEW_COLUMNS = "FilesWithNewColumns"
PLANNING_TIME, SNAPSHOT_TIME, BATCH_TIME = "PlanningTime", "SnapshotTime", "BatchTime"
FILES_PENDING = "FilesPending"
QUERY_FAILURES = "QueryFailures"  # one per failed query (a failed attempt of the job), not per batch
BATCH_METRICS: dict[str, tuple[str, str]] = {
    FILES_IN: ("Count", "files"),
    BYTES_IN: ("Bytes", "bytes"),
    ROWS_IN: ("Count", "rows"),
    DUPLICATES: ("Count", "duplicates"),
    FILTERED: ("Count", "filtered"),
    UNPARSEABLE: ("Count", "unparseable"),
    QUARANTINED: ("Count", "quarantined"),
    MISSING: ("Count", "missing"),
    MALFORMED: ("Count", "malformed_rows"),
    NEW_COLUMNS: ("Count", "new_columns"),
    PLANNING_TIME: ("Milliseconds", "planning_ms"),
    SNAPSHOT_TIME: ("Milliseconds", "snapshot_ms"),
    BATCH_TIME: ("Milliseconds", "batch_ms"),
    FILES_PENDING: ("Count", "pending_files"),
}

_VISIBLE, _IN_FLIGHT, _DELAYED = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                  "ApproximateNumberOfMessagesDelayed")


@dataclass(frozen=True)
class BatchMetrics:
    batch_id: int
    start: int                 # offsets (start, end]: the batch's files
    end: int
    files: int
    bytes: int | None          # None when the status no longer (or not yet) carries this batch's size
    rows: int
    batch_ms: int              # Spark's triggerExecution time
    duplicates: int            # since the previous report
    filtered: int
    unparseable: int
    planning_ms: int
    snapshots: int
    snapshot_ms: int
    quarantined: int           # in this batch
    missing: int
    malformed_rows: int
    new_columns: int           # files read that had columns the schema lacks
    visible: int               # queue backlog when the batch was reported
    in_flight: int
    delayed: int
    pending_files: int         # recorded by the source, not yet in a batch Spark logged
    first_reason: str | None = None  # the first malformed row's reason, with its file

    def as_dict(self) -> dict:
        return asdict(self)


def offset_seq(value) -> int | None:
    """The seq of an offset as Spark's progress shows it: {"seq": N}, its JSON text, nothing, or (PySpark
    4.0's StreamingQueryProgress.fromJson) the Python repr of the parsed JSON, "{'seq': N}"."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return None
    return int(value["seq"]) if isinstance(value, dict) and "seq" in value else None


def batch_range(progress: dict) -> tuple[int, int]:
    """(start, end] of the batch's offsets in Spark's progress of one query with this source; (0, 0) without."""
    for src in progress.get("sources") or ():
        return offset_seq(src.get("startOffset")) or 0, offset_seq(src.get("endOffset")) or 0
    return 0, 0


def is_batch(progress: dict) -> bool:
    """Whether a progress entry reports a batch that read something (Spark also reports idle triggers)."""
    start, end = batch_range(progress)
    return end > start or bool(progress.get("numInputRows"))


def stats_delta(before: dict, after: dict, names: tuple[str, ...]) -> int:
    """How much the named cumulative counters grew between two status reads (never negative: a restored
    older version or a fresh state counts as no growth)."""
    return max(0, sum(int(after.get(n, 0)) - int(before.get(n, 0)) for n in names))


def batch_bytes(recent_batches: list, start: int, end: int) -> int | None:
    for b in recent_batches or ():
        if len(b) == 3 and int(b[0]) == start and int(b[1]) == end:
            return int(b[2])
    return None


def batch_metrics(progress: dict, status_before: dict, status_now: dict, problems: dict[str, int],
                  queue_depth: dict[str, int], recorded: int, logged: int | None,
                  rows: int | None = None) -> BatchMetrics:
    """The figures of one batch. `status_*` are snapshots.read_status results (before: at the previous
    report), `problems` CompletionCheck.problems of this batch (quarantine.tally), `queue_depth` QueueClient.depth, `recorded`
    and `logged` the source's last seq and Spark's newest logged end offset; `rows` the batch's rows when
    Spark's count of its input rows is not them (a direct write's)."""
    start, end = batch_range(progress)
    s0, s1 = status_before.get("stats") or {}, status_now.get("stats") or {}
    return BatchMetrics(
        batch_id=int(progress.get("batchId") or 0),
        start=start, end=end, files=max(0, end - start),
        bytes=batch_bytes(status_now.get("recent_batches"), start, end),
        rows=int(progress.get("numInputRows") or 0) if rows is None else rows,
        batch_ms=int((progress.get("durationMs") or {}).get("triggerExecution", 0)),
        duplicates=stats_delta(s0, s1, counters.DUPLICATES),
        filtered=stats_delta(s0, s1, counters.FILTERED),
        unparseable=stats_delta(s0, s1, counters.UNPARSEABLE),
        planning_ms=stats_delta(s0, s1, (Stat.PLAN_MS,)),
        snapshots=stats_delta(s0, s1, (Stat.SNAPSHOTS,)),
        snapshot_ms=stats_delta(s0, s1, (Stat.SNAPSHOT_MS,)),
        quarantined=int(problems.get(FileStatus.QUARANTINED, 0)),
        missing=int(problems.get(FileStatus.MISSING, 0)),
        malformed_rows=int(problems.get(FileStatus.MALFORMED_ROWS, 0)),
        new_columns=int(problems.get(FileStatus.NEW_COLUMNS, 0)),
        first_reason=problems.get("first_reason"),
        visible=int(queue_depth.get(_VISIBLE, 0)),
        in_flight=int(queue_depth.get(_IN_FLIGHT, 0)),
        delayed=int(queue_depth.get(_DELAYED, 0)),
        pending_files=max(0, recorded - (logged or 0)),
    )


def emf_document(m: BatchMetrics, queue: str, timestamp_ms: int) -> dict:
    """One EMF document with every figure of the batch, under the consumer's queue name. A figure that is
    unknown (the bytes of a batch the status no longer carries) is left out rather than sent as 0."""
    values = {name: getattr(m, attr) for name, (_, attr) in BATCH_METRICS.items()}
    values = {k: v for k, v in values.items() if v is not None}
    return _document(queue, timestamp_ms, values, {"batchId": m.batch_id, "offsets": [m.start, m.end]})


def failure_document(queue: str, timestamp_ms: int) -> dict:
    """The EMF document of a query that failed: one more failed attempt of this consumer's job."""
    return _document(queue, timestamp_ms, {QUERY_FAILURES: 1}, {})


def _document(queue: str, timestamp_ms: int, values: dict[str, int], extra: dict) -> dict:
    units = {**{k: u for k, (u, _) in BATCH_METRICS.items()}, QUERY_FAILURES: "Count"}
    return {
        "_aws": {"Timestamp": int(timestamp_ms), "CloudWatchMetrics": [{
            "Namespace": NAMESPACE, "Dimensions": [[DIMENSION]],
            "Metrics": [{"Name": k, "Unit": units[k]} for k in values]}]},
        DIMENSION: queue, **values, **extra,
    }


def emf_line(document: dict) -> str:
    """The document as one log line: CloudWatch Logs extracts metrics from a log event that is exactly
    one JSON object."""
    return json.dumps(document, separators=(",", ":"), sort_keys=False)
