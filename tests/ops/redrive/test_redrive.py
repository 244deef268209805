"""redrive-dlq against a moto server: peeking leaves messages in place, redrive never loses one."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
import threading
import time
from collections import Counter

import boto3
import pytest

from ops.redrive import aws as rd
from tests.ops.helpers import REPO, counts, drain, run_script, s3_event, unique

KEYS_A = [f"landing/a/2026/11/f{i:02d}.json" for i in range(12)]
KEYS_B = [f"landing/b/2026/11/f{i:02d}.json" for i in range(13)]


@pytest.fixture
def sqs(moto_endpoint):
    return boto3.client("sqs", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture
def queues(sqs):
    """A source queue whose RedrivePolicy names a DLQ; both deleted afterwards."""
    dlq_url = sqs.create_queue(QueueName=unique("dlq"))["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    src_url = sqs.create_queue(QueueName=unique("src"), Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})})["QueueUrl"]
    try:
        yield src_url, dlq_url
    finally:
        for url in (src_url, dlq_url):
            sqs.delete_queue(QueueUrl=url)


def fill(sqs, url: str, keys: list[str], garbage: int = 0) -> None:
    bodies = [s3_event(k) for k in keys] + [f"garbage {i}" for i in range(garbage)]
    for start in range(0, len(bodies), 10):
        sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "MessageBody": b,
             "MessageAttributes": {"origin": {"DataType": "String", "StringValue": f"m{start + i}"},
                                   "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}}
            for i, b in enumerate(bodies[start:start + 10])
        ])


def key_of(body: str) -> str:
    try:
        return json.loads(body)["Records"][0]["s3"]["object"]["key"]
    except (ValueError, KeyError):
        return body


def redrive_cli(moto_endpoint, *args, **kw):
    return run_script("redrive-dlq", *args, "--endpoint-url", moto_endpoint, "--region", "us-east-1", **kw)


# ---------------------------------------------------------------- inspect and export

def test_inspect_reports_and_leaves_every_message_visible(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B, garbage=1)
    r = redrive_cli(moto_endpoint, "inspect", "--dlq-url", dlq_url)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "messages: 26 (26 visible, 0 in flight" in out
    assert f"source queues: {src}" in out
    assert "oldest: sent" in out and "among all messages" in out
    assert "s3://source-data/landing/b/  13 files in 13 messages" in out
    assert "s3://source-data/landing/a/  12 files in 12 messages" in out
    assert "landing/a/2026/11/f00.json" in out and "2026-11-20T08:00:00+00:00" in out
    assert "undecodable: 1 messages" in out
    assert counts(sqs, dlq_url) == (26, 0)  # all visible again at once, not after a timeout

    r = redrive_cli(moto_endpoint, "inspect", "--dlq-url", dlq_url, "--limit", "5", "--depth", "1")
    assert r.returncode == 0 and "among the 5 peeked messages" in r.stdout and "s3://source-data/landing/" in r.stdout
    assert counts(sqs, dlq_url) == (26, 0)


def test_export_writes_an_audit_copy_and_leaves_messages(sqs, queues, moto_endpoint, tmp_path):
    _, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A, garbage=1)
    path = tmp_path / "audit.jsonl"
    r = redrive_cli(moto_endpoint, "export", "--dlq-url", dlq_url, "--to-file", str(path))
    assert r.returncode == 0, r.stderr
    assert "exported 13 messages" in r.stdout
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len({x["messageId"] for x in records}) == len(records) == 13
    assert sorted(f["key"] for x in records for f in x["files"]) == sorted(KEYS_A)
    assert sum(1 for x in records if x["parseError"]) == 1
    assert all(x["messageAttributes"]["blob"]["BinaryValueBase64"] == "AP8=" for x in records)
    assert counts(sqs, dlq_url) == (13, 0)

    r = redrive_cli(moto_endpoint, "export", "--dlq-url", dlq_url, "--to-file", str(path))
    assert r.returncode == 2 and "exists" in r.stderr and "--overwrite" in r.stderr
    r = redrive_cli(moto_endpoint, "export", "--dlq-url", dlq_url, "--to-file", str(path), "--limit", "4", "--overwrite")
    assert r.returncode == 0 and len(path.read_text().splitlines()) == 4
    assert counts(sqs, dlq_url) == (13, 0)


class RepeatingSqs:
    """Receive returns the same two messages twice before running dry, as SQS may when visibility lapses."""

    def __init__(self):
        m = [{"MessageId": f"id{i}", "ReceiptHandle": f"h{i}", "Body": s3_event(f"k/{i}"), "Attributes": {}}
             for i in range(2)]
        self.replies = [m, [dict(x, ReceiptHandle=x["ReceiptHandle"] + "b") for x in m], [], []]
        self.released = []

    def receive_message(self, **kw):
        return {"Messages": self.replies.pop(0) if self.replies else []}

    def change_message_visibility_batch(self, QueueUrl, Entries):
        self.released.extend((e["ReceiptHandle"], e["VisibilityTimeout"]) for e in Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries]}


def test_peek_dedupes_repeated_messages_and_releases_with_the_newest_handle():
    fake = RepeatingSqs()
    decoded, failures = rd.peek(fake, "http://q/123456789012/d", None, 30, log=lambda m: None)
    assert [d.message_id for d in decoded] == ["id0", "id1"] and failures == 0
    assert sorted(fake.released) == [("h0b", 0), ("h1b", 0)]


# ---------------------------------------------------------------- redrive

def test_redrive_everything_falls_back_from_move_task_and_keeps_attributes(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B, garbage=2)
    r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url)
    assert r.returncode == 0, r.stderr
    assert "StartMessageMoveTask: the API does not support it here (HTTP 500); falling back to send-then-delete" in r.stderr
    assert f"send-then-delete: moved 27 messages to {src}" in r.stdout
    assert counts(sqs, dlq_url) == (0, 0)
    moved = drain(sqs, src)
    assert Counter(key_of(m["Body"]) for m in moved) == Counter(KEYS_A + KEYS_B + ["garbage 0", "garbage 1"])
    assert all(m["MessageAttributes"]["blob"]["BinaryValue"] == b"\x00\xff" for m in moved)
    assert len({m["MessageAttributes"]["origin"]["StringValue"] for m in moved}) == 27


def test_key_glob_moves_only_matches_and_the_rest_is_visible_at_once(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B, garbage=1)
    r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--key-glob", "landing/a/*")
    assert r.returncode == 0, r.stderr
    assert "StartMessageMoveTask" not in r.stderr  # a filter rules it out
    assert "moved 12 messages" in r.stdout and "14 messages stay in the DLQ" in r.stdout
    assert counts(sqs, dlq_url) == (14, 0)
    assert sorted(key_of(m["Body"]) for m in drain(sqs, src)) == KEYS_A
    left = drain(sqs, dlq_url)
    assert sorted(key_of(m["Body"]) for m in left) == sorted(KEYS_B + ["garbage 0"])


def test_limit_moves_exactly_n(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B)
    r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--limit", "4",
                    "--key-glob", "landing/b/*")
    assert r.returncode == 0, r.stderr
    assert "moved 4 messages" in r.stdout
    moved = drain(sqs, src)
    assert len(moved) == 4 and all(key_of(m["Body"]) in KEYS_B for m in moved)
    assert counts(sqs, dlq_url) == (21, 0)


@pytest.mark.parametrize("preview", [(), ("--dry-run",)], ids=["default", "--dry-run"])
def test_without_apply_nothing_moves(sqs, queues, moto_endpoint, preview):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B)
    r = redrive_cli(moto_endpoint, "redrive", "--dlq-url", dlq_url, "--key-glob", "landing/a/*", *preview)
    assert r.returncode == 0, r.stderr
    assert f"would move 12 messages to {src}" in r.stdout and "13 messages would stay" in r.stdout
    assert "dry run: nothing was moved. Add --apply to move the messages." in r.stderr
    assert counts(sqs, dlq_url) == (25, 0) and counts(sqs, src) == (0, 0)


@pytest.mark.parametrize("argv, message", [
    (["redrive", "--to", "https://q"], "--to is retired: the target queue is --to-queue-url URL"),
    (["redrive", "--max", "3"], "--max is retired: use --limit N"),
    (["export", "--to", "x.jsonl"], "--to is retired: the file is --to-file FILE.jsonl"),
    (["inspect", "--sample", "5"], "--sample is retired: use --limit N"),
])
def test_retired_flags_say_what_replaced_them(moto_endpoint, argv, message):
    r = redrive_cli(moto_endpoint, *argv, "--dlq-url", "https://sqs.us-east-1.amazonaws.com/123456789012/d")
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_rate_limits_the_flow(sqs, queues):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B)
    t = time.monotonic()
    res = rd.redrive(sqs, dlq_url, src, rate=20, use_move_task=False, wait_seconds=0, log=lambda m: None)
    elapsed = time.monotonic() - t
    assert res.moved == 25
    assert elapsed >= 20 / 20 - 0.05  # batches of 10 leave at 0, 0.5 and 1.0 s


class Crash(BaseException):
    """Stands in for the process dying: not an Exception, so no clean-up code swallows it."""


class CrashingSqs:
    """Passes calls through to SQS until the n-th DeleteMessageBatch; from then on every call dies."""

    def __init__(self, real, crash_on_delete: int):
        self.real, self.left, self.dead = real, crash_on_delete, False

    def __getattr__(self, name):
        attr = getattr(self.real, name)

        def call(*a, **kw):
            if name == "delete_message_batch":
                self.left -= 1
                if self.left <= 0:
                    self.dead = True
            if self.dead:
                raise Crash(name)
            return attr(*a, **kw)
        return call


def test_crash_between_send_and_delete_then_rerun_loses_nothing(sqs, queues):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A + KEYS_B)
    with pytest.raises(Crash):
        rd.redrive(CrashingSqs(sqs, crash_on_delete=2), dlq_url, src, visibility=1, use_move_task=False,
                   wait_seconds=0, log=lambda m: None)
    # 10 deleted, the second batch of 10 sent but not deleted, 5 never touched.
    assert counts(sqs, src)[0] == 20
    time.sleep(1.5)  # the crashed run's messages become visible again
    res = rd.redrive(sqs, dlq_url, src, use_move_task=False, wait_seconds=0, log=lambda m: None)
    assert res.moved == 15
    assert counts(sqs, dlq_url) == (0, 0)
    got = Counter(key_of(m["Body"]) for m in drain(sqs, src))
    assert set(got) == set(KEYS_A + KEYS_B)  # nothing lost
    assert sum(got.values()) == 35  # the one unconfirmed batch came twice; the source dedups it


def test_messages_hidden_by_another_reader_are_waited_for(sqs, queues):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A)
    sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=5, VisibilityTimeout=3)  # like a killed run
    log = []
    res = rd.redrive(sqs, dlq_url, src, use_move_task=False, wait_seconds=0, visibility=3, log=log.append)
    assert res.moved == 12 and res.in_flight_left == 0
    assert any("5 messages in the DLQ are hidden by another reader" in line for line in log)
    assert counts(sqs, dlq_url) == (0, 0)


def test_waiting_for_hidden_messages_is_bounded(sqs, queues):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A[:4])
    got = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=2, VisibilityTimeout=60)["Messages"]
    t = time.monotonic()
    res = rd.redrive(sqs, dlq_url, src, use_move_task=False, wait_seconds=0, visibility=1, log=lambda m: None)
    assert time.monotonic() - t < 10
    assert res.moved == 2 and res.in_flight_left == 2
    assert any("could not look at" in n for n in res.notes)
    sqs.change_message_visibility_batch(QueueUrl=dlq_url, Entries=[
        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0} for i, m in enumerate(got)])


def _start_redrive(moto_endpoint, dlq_url, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "redrive-dlq"), "redrive", "--dlq-url", dlq_url, "--apply",
         "--endpoint-url", moto_endpoint, "--region", "us-east-1", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )


def _wait_for_progress(proc: subprocess.Popen, timeout: float = 30) -> list[str]:
    """Read stderr until the tool reports it has moved something; returns the lines read."""
    lines: list[str] = []
    done = threading.Event()

    def reader():
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("moved ") and not line.startswith("moved 0,"):
                done.set()
                return
    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(timeout), f"no progress within {timeout}s: {lines}"
    return lines


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["sigint", "sigterm", "sigkill"])
def test_interrupted_redrive_then_rerun_loses_nothing(sqs, queues, moto_endpoint, sig):
    src, dlq_url = queues
    keys = [f"landing/c/{i:03d}.json" for i in range(60)]
    fill(sqs, dlq_url, keys)
    proc = _start_redrive(moto_endpoint, dlq_url, "--rate", "15", "--visibility-timeout", "6")
    try:
        _wait_for_progress(proc)
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rest = proc.stderr.read() + proc.stdout.read()
    visible, hidden = counts(sqs, dlq_url)
    moved_first = counts(sqs, src)[0]
    assert 0 < moved_first < 60
    if sig != signal.SIGKILL:
        assert proc.returncode == 130 and "interrupted; no message was lost" in rest
        # An orderly stop at a batch boundary: everything not moved is back in view at once, nothing twice.
        assert hidden == 0 and visible + moved_first == 60
    # Re-run at once: after a kill the held messages are still hidden, and the re-run waits for them.
    r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--no-move-task", "--visibility-timeout", "6")
    assert r.returncode == 0, r.stderr
    if sig == signal.SIGKILL and hidden:
        assert "hidden by another reader" in r.stderr
    assert counts(sqs, dlq_url) == (0, 0)
    got = Counter(key_of(m["Body"]) for m in drain(sqs, src))
    assert set(got) == set(keys)
    assert sum(got.values()) - 60 <= 10  # at most one unconfirmed batch is sent twice


def test_ctrl_c_while_pacing_a_slow_rate_stops_promptly(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    fill(sqs, dlq_url, KEYS_A)
    proc = _start_redrive(moto_endpoint, dlq_url, "--rate", "0.2", "--no-move-task")
    try:
        line = proc.stderr.readline()
        assert line.startswith("DLQ holds"), line
        time.sleep(1.0)  # the first message is out; the next one is 5 s away
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        assert time.monotonic() - t < 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert counts(sqs, dlq_url) == (11, 0) and counts(sqs, src) == (1, 0)


class MoveTaskSqs:
    """An SQS that has StartMessageMoveTask, to check it is chosen (and watched) when nothing is filtered."""

    def __init__(self):
        self.started = []

    def get_queue_attributes(self, QueueUrl, AttributeNames):
        return {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:123456789012:" + QueueUrl.rsplit("/", 1)[1]}}

    def list_message_move_tasks(self, SourceArn, MaxResults):
        if not self.started:
            return {"Results": []}
        return {"Results": [{"Status": "COMPLETED", "ApproximateNumberOfMessagesMoved": 7,
                             "ApproximateNumberOfMessagesToMove": 7}]}

    def start_message_move_task(self, **kw):
        self.started.append(kw)
        return {"TaskHandle": "t-1"}


def test_move_task_is_used_when_nothing_is_filtered():
    fake = MoveTaskSqs()
    res = rd.redrive(fake, "http://q/123456789012/dlq", "http://q/123456789012/src", rate=50, log=lambda m: None)
    assert res.method == "StartMessageMoveTask" and res.moved == 7
    assert fake.started == [{"SourceArn": "arn:aws:sqs:us-east-1:123456789012:dlq",
                             "DestinationArn": "arn:aws:sqs:us-east-1:123456789012:src",
                             "MaxNumberOfMessagesPerSecond": 50}]


# ---------------------------------------------------------------- where to send, and bad input

def test_target_errors(sqs, queues, moto_endpoint):
    src, dlq_url = queues
    orphan = sqs.create_queue(QueueName=unique("orphan"))["QueueUrl"]
    try:
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", orphan)
        assert r.returncode == 2 and "ListDeadLetterSourceQueues is empty); pass --to-queue-url URL" in r.stderr
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--to-queue-url", dlq_url)
        assert r.returncode == 2 and "--to-queue-url is the DLQ itself" in r.stderr
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--to-queue-url", orphan + "-gone")
        assert r.returncode == 2 and "queue does not exist" in r.stderr
        r = redrive_cli(moto_endpoint, "inspect", "--dlq-url", orphan + "-gone")
        assert r.returncode == 2 and "--dlq-url" in r.stderr and "does not exist" in r.stderr
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--limit", "0")
        assert r.returncode == 2 and "--limit" in r.stderr and "at least 1" in r.stderr
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url, "--rate", "fast")
        assert r.returncode == 2 and "--rate" in r.stderr
        r = redrive_cli(moto_endpoint, "inspect", "--dlq-url", "dlq")
        assert r.returncode == 2 and "is not an SQS queue URL" in r.stderr
        r = redrive_cli(moto_endpoint, "inspect")
        assert r.returncode == 2 and "pass --dlq-url" in r.stderr
        # Explicit --to to another queue works even for a DLQ nobody names.
        fill(sqs, orphan, KEYS_A[:3])
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", orphan, "--to-queue-url", src, "--no-move-task")
        assert r.returncode == 0 and "moved 3 messages" in r.stdout
        assert len(drain(sqs, src)) == 3
        for out in (r.stdout, r.stderr):
            assert "testing" not in out  # never print credentials
    finally:
        sqs.delete_queue(QueueUrl=orphan)


def test_outputs_file_names_the_dlq_and_picks_among_several_sources(sqs, queues, moto_endpoint, tmp_path):
    src, dlq_url = queues
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    second = sqs.create_queue(QueueName=unique("src2"), Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})})["QueueUrl"]
    try:
        fill(sqs, dlq_url, KEYS_A[:2])
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--dlq-url", dlq_url)
        assert r.returncode == 2 and "serves 2 queues" in r.stderr and "--to-queue-url" in r.stderr
        outputs = tmp_path / "out.json"
        outputs.write_text(json.dumps({"Stack": {"Consumers": {"ingest": {
            "queueUrl": src, "queueArn": "a", "dlqUrl": dlq_url, "dlqArn": dlq_arn, "jobRoleArn": "r"}}}}))
        r = redrive_cli(moto_endpoint, "inspect", "--outputs-file", str(outputs), "--consumer", "ingest")
        assert r.returncode == 0 and "messages: 2 " in r.stdout
        r = redrive_cli(moto_endpoint, "redrive", "--apply", "--outputs-file", str(outputs), "--consumer", "ingest", "--no-move-task")
        assert r.returncode == 0 and f"moved 2 messages to {src}" in r.stdout
        r = redrive_cli(moto_endpoint, "inspect", "--outputs-file", str(outputs))
        assert r.returncode == 2 and "pass --consumer NAME too" in r.stderr
        r = redrive_cli(moto_endpoint, "inspect", "--outputs-file", str(outputs), "--consumer", "ingst")
        assert r.returncode == 2 and "unknown consumer 'ingst' (did you mean 'ingest'?)" in r.stderr
    finally:
        sqs.delete_queue(QueueUrl=second)


def test_batch_too_long_is_sent_in_halves():
    from botocore.exceptions import ClientError

    class Picky:
        def __init__(self):
            self.batches = []

        def send_message_batch(self, QueueUrl, Entries):
            if len(Entries) > 3:
                raise ClientError({"Error": {"Code": "AWS.SimpleQueueService.BatchRequestTooLong"}}, "SendMessageBatch")
            self.batches.append(len(Entries))
            return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    fake = Picky()
    resp = rd._send_batch(fake, "q", [{"Id": str(i), "MessageBody": "x"} for i in range(10)])
    assert sorted(s["Id"] for s in resp["Successful"]) == sorted(str(i) for i in range(10))
    assert sum(fake.batches) == 10 and max(fake.batches) <= 3
