"""Pure DLQ helpers: decoding, glob filter, prefix grouping, pacing, re-send entries. No AWS."""
import json
from datetime import datetime, timezone

import pytest

from ops.redrive import dlq
from tests.ops.helpers import s3_event


def msg(body: str, mid: str = "m1", **attrs) -> dict:
    return {"MessageId": mid, "ReceiptHandle": "h", "Body": body,
            "Attributes": {"SentTimestamp": "1795219200000", "ApproximateReceiveCount": "4", **attrs}}


def test_decode_reads_keys_times_and_counts():
    d = dlq.decode_message(msg(s3_event("landing/a b/x.json", when="2026-11-20T08:00:00.000Z")))
    assert d.error is None
    assert [f.key for f in d.files] == ["landing/a b/x.json"]  # URL-decoded
    assert d.files[0].event_time == datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
    assert d.receive_count == 4
    assert d.sent_at == datetime.fromtimestamp(1795219200, tz=timezone.utc)


def test_decode_sns_envelope_and_garbage():
    env = json.dumps({"Type": "Notification", "Message": s3_event("k/1.csv")})
    assert [f.key for f in dlq.decode_message(msg(env)).files] == ["k/1.csv"]
    bad = dlq.decode_message(msg("not json"))
    assert bad.files == () and "not JSON" in bad.error


def test_glob_matches_any_record_and_never_undecodable():
    two = json.loads(s3_event("a/1.json"))
    two["Records"].append(json.loads(s3_event("b/2.json"))["Records"][0])
    d = dlq.decode_message(msg(json.dumps(two)))
    assert dlq.matches(d, "b/*") and dlq.matches(d, "a/*") and not dlq.matches(d, "c/*")
    assert dlq.matches(d, None)
    assert dlq.matches(dlq.decode_message(msg(s3_event("a/deep/er/x.json"))), "a/*.json")  # * crosses /
    assert not dlq.matches(dlq.decode_message(msg(s3_event("A/x.json"))), "a/*")  # case-sensitive
    garbage = dlq.decode_message(msg("nope"))
    assert dlq.matches(garbage, None) and not dlq.matches(garbage, "*")


@pytest.mark.parametrize("key,depth,prefix", [
    ("a/b/c/d.json", 2, "a/b/"), ("a/b/c/d.json", 1, "a/"), ("a/x.json", 2, "a/"), ("x.json", 2, ""),
    ("a/b/c/d.json", 0, ""), ("a/b/c/d.json", 9, "a/b/c/"),
])
def test_key_prefix(key, depth, prefix):
    assert dlq.key_prefix(key, depth) == prefix


def test_group_by_prefix_counts_files_and_messages():
    ds = [dlq.decode_message(msg(s3_event(k, when=t), mid=str(i))) for i, (k, t) in enumerate([
        ("in/a/1.json", "2026-11-20T08:00:00Z"), ("in/a/2.json", "2026-11-20T09:00:00Z"),
        ("in/b/1.json", "2026-11-20T07:00:00Z"),
    ])]
    groups = dlq.group_by_prefix(ds, 2)
    assert [(g.prefix, len(g.files), len(g.messages)) for g in groups] == [("in/a/", 2, 2), ("in/b/", 1, 1)]
    assert groups[0].oldest_event.hour == 8 and groups[0].newest_event.hour == 9


def test_format_duration():
    assert [dlq.format_duration(s) for s in (5, 65, 3600 * 3 + 120, 86400 * 2 + 3600)] == ["5s", "1m05s", "3h02m", "2d01h"]


def test_pace_delay_and_batch_size():
    assert dlq.pace_delay(0, 0.0, 5) == 0
    assert dlq.pace_delay(10, 1.0, 5) == pytest.approx(1.0)
    assert dlq.pace_delay(10, 3.0, 5) == 0
    assert dlq.pace_delay(1000, 0.0, None) == 0
    assert [dlq.batch_size_for(r) for r in (None, 0.5, 3, 10, 500)] == [10, 1, 3, 10, 10]


def test_pacer_spreads_sends_over_time():
    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    p = dlq.Pacer(rate=4, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        p.before_send(2)  # 2 messages per batch at 4 msg/s: one batch per 0.5 s
    assert now[0] == pytest.approx(2.0)
    assert p.sent == 10


def test_send_entry_keeps_body_and_attributes():
    m = msg("body", mid="abc", AWSTraceHeader="Root=1-x")
    m["MessageAttributes"] = {
        "s": {"DataType": "String", "StringValue": "v"},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        "n": {"DataType": "Number.int", "StringValue": "3"},
    }
    e = dlq.send_entry(m, "7", fifo=False)
    assert e["Id"] == "7" and e["MessageBody"] == "body"
    assert e["MessageAttributes"] == m["MessageAttributes"]
    assert e["MessageSystemAttributes"]["AWSTraceHeader"]["StringValue"] == "Root=1-x"
    assert "MessageGroupId" not in e
    f = dlq.send_entry({**m, "Attributes": {"MessageGroupId": "g1"}}, "0", fifo=True)
    assert (f["MessageGroupId"], f["MessageDeduplicationId"]) == ("g1", "abc")


def test_export_record_is_json_with_base64_binaries():
    m = msg(s3_event("k/1.json"))
    m["MessageAttributes"] = {"b": {"DataType": "Binary", "BinaryValue": b"\xff"}}
    rec = dlq.export_record(m, dlq.decode_message(m))
    json.dumps(rec)
    assert rec["messageAttributes"]["b"]["BinaryValueBase64"] == "/w=="
    assert rec["files"][0]["key"] == "k/1.json" and rec["parseError"] is None


def test_move_task_errors_that_mean_unsupported():
    assert "does not support" in dlq.move_task_unsupported(500, "500")
    assert "does not support" in dlq.move_task_unsupported(400, "UnsupportedOperation")
    assert dlq.move_task_unsupported(403, "AccessDenied") is None
    assert dlq.move_task_unsupported(400, "ResourceNotFoundException") is None
