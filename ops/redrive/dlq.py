"""What redrive-dlq decides, without I/O: decoding and matching messages, grouping them for a report,
pacing and building what is re-sent, and the inspection and redrive reports."""
from __future__ import annotations

import base64
import fnmatch
import time
from dataclasses import dataclass, field
from datetime import datetime

from s3sqs.planning.events import MessageParseError, parse_body
from s3sqs.core.files import S3File
from s3sqs.core.units import from_ms

SQS_BATCH = 10  # SQS batch APIs take at most 10 entries


@dataclass(frozen=True)
class Decoded:
    message_id: str
    sent_at: datetime | None
    receive_count: int | None
    files: tuple[S3File, ...]
    ignored: tuple[str, ...]
    error: str | None  # why the body could not be parsed, if it could not


def _ms_to_dt(value) -> datetime | None:
    try:
        return from_ms(int(value))
    except (TypeError, ValueError):
        return None


def decode_message(msg: dict) -> Decoded:
    attrs = msg.get("Attributes") or {}
    try:
        count = int(attrs["ApproximateReceiveCount"])
    except (KeyError, ValueError):
        count = None
    files: tuple[S3File, ...] = ()
    ignored: tuple[str, ...] = ()
    error = None
    try:
        parsed = parse_body(msg.get("Body", ""))
        files, ignored = parsed.files, parsed.ignored
    except MessageParseError as e:
        error = str(e)
    return Decoded(msg["MessageId"], _ms_to_dt(attrs.get("SentTimestamp")), count, files, ignored, error)


def matches(decoded: Decoded, key_glob: str | None) -> bool:
    """No glob matches everything. With a glob, a message matches when any file it announces matches;
    `*` also crosses `/`. Messages that cannot be parsed never match a glob."""
    if key_glob is None:
        return True
    return any(fnmatch.fnmatchcase(f.key, key_glob) for f in decoded.files)


def wanted(decoded: Decoded, key_glob: str | None, max_messages: int | None, matched: int) -> bool:
    """Whether a redrive moves this message: it matches the glob, and fewer than `max_messages` have matched."""
    return matches(decoded, key_glob) and (max_messages is None or matched < max_messages)


def key_prefix(key: str, depth: int) -> str:
    """The first `depth` path segments of the key's directory, with a trailing slash; "" at the top level."""
    dirs = key.split("/")[:-1]
    return "/".join(dirs[:depth]) + "/" if dirs and depth > 0 else ""


@dataclass
class PrefixGroup:
    bucket: str
    prefix: str
    messages: set = field(default_factory=set)
    files: list = field(default_factory=list)

    @property
    def oldest_event(self) -> datetime | None:
        times = [f.event_time for f in self.files if f.event_time]
        return min(times) if times else None

    @property
    def newest_event(self) -> datetime | None:
        times = [f.event_time for f in self.files if f.event_time]
        return max(times) if times else None


def group_by_prefix(decoded: list[Decoded], depth: int) -> list[PrefixGroup]:
    """Group the announced files by bucket and key prefix, biggest group first."""
    groups: dict[tuple[str, str], PrefixGroup] = {}
    for d in decoded:
        for f in d.files:
            k = (f.bucket, key_prefix(f.key, depth))
            g = groups.setdefault(k, PrefixGroup(*k))
            g.messages.add(d.message_id)
            g.files.append(f)
    return sorted(groups.values(), key=lambda g: (-len(g.files), g.bucket, g.prefix))


def oldest_sent(decoded: list[Decoded]) -> datetime | None:
    times = [d.sent_at for d in decoded if d.sent_at]
    return min(times) if times else None


def format_duration(seconds: float) -> str:
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


# ---------------------------------------------------------------- pacing

def pace_delay(sent: int, elapsed: float, rate: float | None) -> float:
    """Seconds to wait before more messages go out, so that `sent` messages take at least sent/rate seconds."""
    if not rate:
        return 0.0
    return max(0.0, sent / rate - elapsed)


def batch_size_for(rate: float | None) -> int:
    """Below 10 msg/s, smaller batches keep the flow smooth instead of bursts of 10."""
    if not rate:
        return SQS_BATCH
    return max(1, min(SQS_BATCH, int(rate)))


class Pacer:
    def __init__(self, rate: float | None, clock=time.monotonic, sleep=time.sleep):
        self.rate, self.clock, self.sleep = rate, clock, sleep
        self.started = clock()
        self.sent = 0

    def before_send(self, n: int) -> None:
        # Wait until the messages already sent have used up their share of time.
        delay = pace_delay(self.sent, self.clock() - self.started, self.rate)
        if delay > 0:
            self.sleep(delay)
        self.sent += n


# ---------------------------------------------------------------- re-sending

def send_entry(msg: dict, entry_id: str, fifo: bool) -> dict:
    """A SendMessageBatch entry carrying the same body and message attributes as the received message."""
    entry: dict = {"Id": entry_id, "MessageBody": msg["Body"]}
    attrs = {}
    for name, a in (msg.get("MessageAttributes") or {}).items():
        v = {"DataType": a["DataType"]}
        for k in ("StringValue", "BinaryValue"):
            if k in a:
                v[k] = a[k]
        attrs[name] = v
    if attrs:
        entry["MessageAttributes"] = attrs
    sys_attrs = msg.get("Attributes") or {}
    if "AWSTraceHeader" in sys_attrs:
        entry["MessageSystemAttributes"] = {
            "AWSTraceHeader": {"DataType": "String", "StringValue": sys_attrs["AWSTraceHeader"]}
        }
    if fifo:
        entry["MessageGroupId"] = sys_attrs.get("MessageGroupId", "redrive")
        entry["MessageDeduplicationId"] = sys_attrs.get("MessageDeduplicationId", msg["MessageId"])
    return entry


def export_record(msg: dict, decoded: Decoded) -> dict:
    """One JSON-lines record of the audit copy; binary attribute values are base64 encoded."""
    mattrs = {}
    for name, a in (msg.get("MessageAttributes") or {}).items():
        v = {"DataType": a["DataType"]}
        if "StringValue" in a:
            v["StringValue"] = a["StringValue"]
        if "BinaryValue" in a:
            v["BinaryValueBase64"] = base64.b64encode(a["BinaryValue"]).decode()
        mattrs[name] = v
    return {
        "messageId": msg["MessageId"],
        "md5OfBody": msg.get("MD5OfBody"),
        "body": msg.get("Body"),
        "attributes": msg.get("Attributes") or {},
        "messageAttributes": mattrs,
        "files": [
            {"bucket": f.bucket, "key": f.key,
             "eventTime": f.event_time.isoformat() if f.event_time else None, "eventName": f.event_name}
            for f in decoded.files
        ],
        "ignored": list(decoded.ignored),
        "parseError": decoded.error,
    }


def move_task_unsupported(status: int | None, code: str) -> str | None:
    """Why StartMessageMoveTask cannot be used here, or None when the error is real and should be shown."""
    if status is not None and status >= 500:
        return f"the API does not support it here (HTTP {status})"
    if code in ("UnsupportedOperation", "InvalidAction", "UnknownOperationException", "AWS.SimpleQueueService.UnsupportedOperation"):
        return f"the API does not support it here ({code})"
    return None


# ---------------------------------------------------------------- reports

@dataclass
class Inspection:
    """What inspect found: SQS's approximate counts, the source queues and a decoded sample."""
    visible: int
    in_flight: int
    delayed: int
    sources: list[str]
    decoded: list[Decoded]
    released_failures: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


def inspection_json(dlq_url: str, ins: Inspection) -> dict:
    """inspect --json: the counts, the source queues and every peeked message decoded."""
    def when(t):
        return t.isoformat(timespec="seconds") if t else None
    return {"dlqUrl": dlq_url, "messages": ins.total, "visible": ins.visible, "inFlight": ins.in_flight,
            "delayed": ins.delayed, "sourceQueues": list(ins.sources),
            "oldestSent": when(oldest_sent(ins.decoded)),
            "sample": [{"messageId": d.message_id, "sent": when(d.sent_at), "receiveCount": d.receive_count,
                        "files": [{"bucket": f.bucket, "key": f.key, "eventTime": when(f.event_time)} for f in d.files],
                        "error": d.error} for d in ins.decoded]}


def format_inspection(dlq_url: str, ins: Inspection, depth: int, per_group: int, now: datetime) -> str:
    """The inspect report: counts, sources, the oldest message, then the sample grouped by key prefix."""
    lines = [f"DLQ {dlq_url}"]
    lines.append(f"messages: {ins.total} ({ins.visible} visible, {ins.in_flight} in flight, {ins.delayed} delayed)")
    lines.append("source queues: " + (", ".join(ins.sources) if ins.sources else "none (no RedrivePolicy names it)"))
    oldest = oldest_sent(ins.decoded)
    if oldest:
        scope = "all" if len(ins.decoded) >= ins.total else f"the {len(ins.decoded)} peeked"
        lines.append(f"oldest: sent {format_duration((now - oldest).total_seconds())} ago "
                     f"({oldest.isoformat(timespec='seconds')}), among {scope} messages")
    if not ins.decoded:
        lines.append("no messages received")
        return "\n".join(lines)
    nfiles = sum(len(d.files) for d in ins.decoded)
    lines.append(f"sample: {len(ins.decoded)} messages announcing {nfiles} files, by key prefix:")
    for g in group_by_prefix(ins.decoded, depth):
        span = ""
        if g.oldest_event:
            first, last = (t.isoformat(timespec="seconds") for t in (g.oldest_event, g.newest_event))
            span = f"  events {first}" + (f" .. {last}" if last != first else "")
        lines.append(f"  s3://{g.bucket}/{g.prefix}  {len(g.files)} files in {len(g.messages)} messages{span}")
        for f in g.files[:per_group]:
            t = f.event_time.isoformat(timespec="seconds") if f.event_time else "-"
            lines.append(f"      {t}  {f.key}")
        if len(g.files) > per_group:
            lines.append(f"      ... {len(g.files) - per_group} more")
    bad = [d for d in ins.decoded if d.error]
    if bad:
        lines.append(f"undecodable: {len(bad)} messages")
        for d in bad[:per_group]:
            lines.append(f"      {d.message_id}: {d.error}")
    only_ignored = [d for d in ins.decoded if not d.error and not d.files]
    if only_ignored:
        lines.append(f"announcing no files: {len(only_ignored)} messages (e.g. {only_ignored[0].ignored[:1]})")
    if ins.released_failures:
        lines.append(f"warning: {ins.released_failures} peeked messages could not be made visible at once; "
                     "they reappear when their visibility timeout ends")
    return "\n".join(lines)


@dataclass
class RedriveResult:
    """How a redrive went, message by message."""
    method: str
    target: str
    moved: int = 0
    matched: int = 0
    skipped: int = 0  # did not match the filter; left in the DLQ
    send_failed: int = 0  # target refused; left in the DLQ
    delete_failed: int = 0  # sent, but still in the DLQ: a later run re-sends them (duplicates, no loss)
    in_flight_left: int = 0  # hidden by another reader to the end; not looked at
    notes: list[str] = field(default_factory=list)


class Progress:
    """Logs the redrive's counts and rate, at most once per `every` seconds (or when forced)."""

    def __init__(self, log, every: float = 1.0, clock=time.monotonic):
        self.log, self.every, self.clock = log, every, clock
        self.started = self.last = clock()

    def __call__(self, r: RedriveResult, force: bool = False) -> None:
        now = self.clock()
        if force or now - self.last >= self.every:
            self.last = now
            rate = r.moved / (now - self.started) if now > self.started else 0.0
            self.log(f"moved {r.moved}, skipped {r.skipped}, send failed {r.send_failed}, "
                     f"delete failed {r.delete_failed} ({rate:.1f} msg/s)")
