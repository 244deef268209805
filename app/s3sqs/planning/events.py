"""Pure parsing of SQS message bodies into the S3 files they announce. No I/O.

A body is one of:
- a raw S3 event notification (`{"Records": [...]}`), as S3 -> SQS or SNS raw delivery sends it;
- an SNS envelope (`{"Type": "Notification", "Message": "<S3 event JSON>"}`);
- an EventBridge "Object Created" event (`{"detail-type": "Object Created", "detail": {...}}`).
Every record is read, not only the first. Keys arrive URL-encoded with `+` for space.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import unquote_plus

from ..core import fastjson
from ..core.errors import S3SqsError
from ..core.files import S3File
from ..core.units import to_ms
from ..core.vocabulary import MessageFate


class MessageParseError(S3SqsError, ValueError):
    """The body cannot be understood as any supported event; the message says why."""


@dataclass(frozen=True)
class ParsedBody:
    files: tuple[S3File, ...]
    ignored: tuple[str, ...]  # why each skipped record was skipped (test events, deletions, ...)

    @property
    def kind(self) -> MessageFate | None:
        """None when the body announces files; else why it announces none."""
        if self.files:
            return None
        if self.ignored == ("s3:TestEvent",):
            return MessageFate.TEST_EVENT
        return MessageFate.NOT_CREATED if self.ignored else MessageFate.NO_RECORDS


def parse_body(body: str) -> ParsedBody:
    try:
        doc = fastjson.loads(body)
    except (fastjson.DecodeError, TypeError) as e:
        raise MessageParseError(f"body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise MessageParseError(f"body is JSON {type(doc).__name__}, expected an object")

    if doc.get("Type") == "Notification" and "Message" in doc:
        inner = doc["Message"]
        if not isinstance(inner, str):
            raise MessageParseError("SNS envelope's Message is not a string")
        try:
            return parse_body(inner)
        except MessageParseError as e:
            raise MessageParseError(f"inside SNS envelope: {e}") from None
    if "detail-type" in doc and doc.get("source") == "aws.s3":
        return _parse_eventbridge(doc)
    if doc.get("Event") == "s3:TestEvent":
        return ParsedBody((), ("s3:TestEvent",))
    if "Records" in doc:
        return _parse_records(doc["Records"])
    raise MessageParseError(
        "not an S3 event: expected 'Records', an SNS envelope or an EventBridge event; "
        f"top-level keys are {sorted(doc)[:10]}"
    )


def _parse_records(records) -> ParsedBody:
    if not isinstance(records, list):
        raise MessageParseError("'Records' is not a list")
    files: list[S3File] = []
    ignored: list[str] = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise MessageParseError(f"Records[{i}] is not an object")
        name = rec.get("eventName", "")
        if isinstance(name, str):
            name = name.removeprefix("s3:")  # MinIO and Ceph send "s3:ObjectCreated:Put"
        if not isinstance(name, str) or not name.startswith("ObjectCreated:"):
            ignored.append(f"Records[{i}]: event {name!r} is not ObjectCreated")
            continue
        s3 = rec.get("s3")
        if not isinstance(s3, dict):
            raise MessageParseError(f"Records[{i}] has no 's3' object")
        bucket = (s3.get("bucket") or {}).get("name")
        obj = s3.get("object") or {}
        raw_key = obj.get("key")
        if not isinstance(bucket, str) or not bucket:
            raise MessageParseError(f"Records[{i}].s3.bucket.name is missing")
        if not isinstance(raw_key, str) or not raw_key:
            raise MessageParseError(f"Records[{i}].s3.object.key is missing")
        files.append(S3File(  # positional: thousands of files a second pass here
            bucket,
            unquote_plus(raw_key),
            _int_or_none(obj.get("size"), f"Records[{i}].s3.object.size"),
            _str_or_none(obj.get("eTag")),
            _str_or_none(obj.get("versionId")),
            to_ms(_time_or_none(rec.get("eventTime"), f"Records[{i}].eventTime")),
            name,
        ))
    return ParsedBody(tuple(files), tuple(ignored))


def _parse_eventbridge(doc: dict) -> ParsedBody:
    kind = doc.get("detail-type")
    if kind != "Object Created":
        return ParsedBody((), (f"EventBridge event {kind!r} is not 'Object Created'",))
    detail = doc.get("detail")
    if not isinstance(detail, dict):
        raise MessageParseError("EventBridge event has no 'detail' object")
    bucket = (detail.get("bucket") or {}).get("name")
    obj = detail.get("object") or {}
    key = obj.get("key")
    if not isinstance(bucket, str) or not bucket or not isinstance(key, str) or not key:
        raise MessageParseError("EventBridge detail lacks bucket.name or object.key")
    # EventBridge keys are URL-encoded the same way as S3 notifications.
    return ParsedBody((S3File(
        bucket=bucket,
        key=unquote_plus(key),
        size=_int_or_none(obj.get("size"), "detail.object.size"),
        etag=_str_or_none(obj.get("etag") or obj.get("eTag")),
        version_id=_str_or_none(obj.get("version-id")),
        event_ms=to_ms(_time_or_none(doc.get("time"), "time")),
        event_name=f"ObjectCreated:{detail.get('reason', 'EventBridge')}",
    ),), ())


def _int_or_none(v, where: str) -> int | None:
    if v.__class__ is int and v >= 0:  # nearly every size: no further checks (a bool's class is bool)
        return v
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise MessageParseError(f"{where} is not an integer: {v!r}")
    try:
        n = int(v)
    except ValueError:
        raise MessageParseError(f"{where} is not an integer: {v!r}") from None
    if n < 0:
        raise MessageParseError(f"{where} is negative: {n}")
    return n


def _str_or_none(v) -> str | None:
    return v if isinstance(v, str) and v else None


def _time_or_none(v, where: str) -> datetime | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise MessageParseError(f"{where} is not a timestamp string: {v!r}")
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise MessageParseError(f"{where} is not an ISO-8601 timestamp: {v!r}") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)
