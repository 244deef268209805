"""The source cleaner on the moto server: consumers' commit markers (written by the source itself, or as it
writes them), the fan-out rule, archive to another bucket and to the same bucket, delete, a changed eTag, a
retention not yet passed, a kill between the copy and the delete, and `source-state clean` itself."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from devtools.fault_proxy import FaultProxy, Faults
from infra.local_stand_in import write_outputs_file
from s3sqs.cleaning import actions
from s3sqs.cleaning.cleaner import Cleaner, ConsumerMarkers
from s3sqs.cleaning.rule import Consumer
from s3sqs.config.clean import CleanSettingsError, parse_clean_settings
from s3sqs.config.options import parse_options
from s3sqs.core.files import S3File
from s3sqs.core.units import now_ms
from s3sqs.core.vocabulary import CleanStatus, FileStatus
from s3sqs.planning.controller import Controller
from s3sqs.planning.batch_limits import Limit
from s3sqs.state import markers, quarantine
from s3sqs.state.store import S3Store
from ops.state.cli import main as source_state
from tests.support.aws import bucket_to_queue

DAY = 86_400_000
ALL = Limit(None, None)


class Place:
    """A source bucket, a checkpoint bucket and an archive bucket of their own on the moto server."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        tag = uuid.uuid4().hex[:8]
        self.src, self.ck, self.arch = f"src-{tag}", f"ck-{tag}", f"arch-{tag}"
        for b in (self.src, self.ck, self.arch):
            self.s3.create_bucket(Bucket=b)

    def put(self, key: str, body: bytes, bucket: str | None = None) -> None:
        self.s3.put_object(Bucket=bucket or self.src, Key=key, Body=body)

    def body(self, bucket: str, key: str) -> bytes | None:
        try:
            return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        return [o["Key"] for o in self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]

    def state_uri(self, consumer: str) -> str:
        return f"s3://{self.ck}/checkpoints/{consumer}/source-state"

    def markers_of(self, consumer: str) -> S3Store:
        return S3Store(self.state_uri(consumer), self.s3)

    def commit_as(self, consumer: str, keys: list[str], committed_ms: int, first: int = 1) -> None:
        """A commit marker, as the consumer's source writes one after a commit of these files (as they are now)."""
        files = []
        for i, key in enumerate(keys):
            h = self.s3.head_object(Bucket=self.src, Key=key)
            files.append(S3File(self.src, key, h["ContentLength"], h["ETag"].strip('"'), seq=first + i))
        markers.write(self.markers_of(consumer), markers.marker_of(first, first + len(keys) - 1, committed_ms, files))

    def cleaner(self, consumers: list[Consumer], clock=now_ms, progress=None, **settings) -> Cleaner:
        return Cleaner(self.s3, parse_clean_settings(settings), self.src,
                       [ConsumerMarkers(c, self.markers_of(c.name)) for c in consumers],
                       S3Store(f"s3://{self.ck}/source-cleaning", self.s3), clock=clock, progress=progress,
                       progress_seconds=0)


def run(cleaner: Cleaner, apply: bool = True) -> dict[str, CleanStatus]:
    rows = []
    cleaner.run(apply, on_row=rows.append)
    return {r.key: r.status for r in rows}


@pytest.fixture
def place(moto_endpoint) -> Place:
    return Place(moto_endpoint)


def controller(queue_url: str, state: str, endpoint: str) -> Controller:
    d = Controller(parse_options({
        "fileFormat": "csv", "queueUrl": queue_url, "stateLocation": state, "endpointUrl": endpoint,
        "queueRegion": "us-east-1", "sqs.longPollingWaitTimeSeconds": "1", "queueFetchWaitTimeoutSeconds": "3"}))
    d.open()
    return d


def drain(d: Controller) -> None:
    while msgs := d.intake.queue.receive_round(5, 1):
        d.intake.ingest(msgs)


# ---- what the consumers write ----

def test_the_source_writes_a_marker_of_the_files_a_commit_put_in_the_sink_cleanly(moto_endpoint, place):
    w = bucket_to_queue(moto_endpoint)
    for name in ("a.csv", "bad.csv", "c.csv"):
        w.put(name, b"x\n1\n")
    d = controller(w.queue_url, place.state_uri("ingest"), moto_endpoint)
    try:
        drain(d)
        end = d.latest_offset(0, ALL)
        assert end == 3 and place.keys(place.ck, "checkpoints/ingest/source-state/committed/") == []
        bad = next(f for f in d.files_between(0, end) if f.key == "bad.csv")  # a task set it aside
        q = S3Store(f"{place.state_uri('ingest')}/quarantine", place.s3)
        q.put_bytes(json.dumps(quarantine.record(bad, FileStatus.QUARANTINED, error="not CSV")).encode(),
                    quarantine.record_name(end, bad))
        before = now_ms()
        assert d.latest_offset(end, ALL) == 3  # the next plan's start: batch 0 is in the sink
    finally:
        d.close()
    (m,) = markers.read_all(place.markers_of("ingest"))
    assert (m.first, m.last) == (1, 3) and m.committed_ms >= before
    # in seq order, which is the order the queue gave the events in: compare as a set
    assert sorted((f.bucket, f.key, f.size) for f in m.files) == [(w.bucket, "a.csv", 4), (w.bucket, "c.csv", 4)]
    assert all(f.etag for f in m.files)


def test_two_consumers_whose_prefixes_overlap_each_must_commit_a_file_they_both_read(moto_endpoint, place):
    """cdk.json's own two consumers: ingest reads the whole bucket, analytics reads analytics/. Each runs its
    source against its own queue and writes its markers; the cleaner reads them."""
    from devtools.local_aws import wire_consumer

    name = f"fan-{uuid.uuid4().hex[:8]}"
    ingest_path = wire_consumer(moto_endpoint, name, consumer="ingest")
    analytics_path = wire_consumer(moto_endpoint, name, consumer="analytics")
    assert ingest_path.bucket == analytics_path.bucket
    place.src = ingest_path.bucket
    place.put("analytics/a.csv", b"id\n1\n")
    place.put("other/b.csv", b"id\n2\n")
    ingest = controller(ingest_path.queue_url, place.state_uri("ingest"), moto_endpoint)
    analytics = controller(analytics_path.queue_url, place.state_uri("analytics"), moto_endpoint)
    try:
        drain(ingest)
        drain(analytics)
        ingest.latest_offset(ingest.latest_offset(0, ALL), ALL)  # planned, then committed
        a_end = analytics.latest_offset(0, ALL)  # planned, not committed yet
        assert a_end == 1
        t = now_ms()
        consumers = [Consumer("ingest", ""), Consumer("analytics", "analytics/")]
        archive = dict(cleanSource="archive", sourceArchiveLocation=f"s3://{place.arch}/kept/", cleanSourceRetention="1d")
        first = run(place.cleaner(consumers, clock=lambda: t + 2 * DAY, **archive))
        assert first == {"analytics/a.csv": CleanStatus.WAITING, "other/b.csv": CleanStatus.ARCHIVED}
        assert place.body(place.src, "analytics/a.csv") == b"id\n1\n" and place.body(place.src, "other/b.csv") is None
        assert place.body(place.arch, "kept/other/b.csv") == b"id\n2\n"

        analytics.latest_offset(a_end, ALL)  # now analytics has it in its sink too
        t = now_ms()
        assert run(place.cleaner(consumers, clock=lambda: t + DAY // 2, **archive))["analytics/a.csv"] == \
            CleanStatus.RETENTION  # a day after the last commit, not the first
        last = run(place.cleaner(consumers, clock=lambda: t + 2 * DAY, **archive))
        assert last == {"analytics/a.csv": CleanStatus.ARCHIVED, "other/b.csv": CleanStatus.ARCHIVED}
        assert place.keys(place.src) == [] and place.keys(place.arch) == ["kept/analytics/a.csv", "kept/other/b.csv"]
    finally:
        ingest.close()
        analytics.close()


# ---- archive, delete, and what is left alone ----

def test_archive_into_the_same_bucket_outside_every_consumers_prefix(place):
    place.put("in/a.csv", b"abc")
    place.commit_as("ingest", ["in/a.csv"], now_ms() - 2 * DAY)
    same = dict(cleanSource="archive", sourceArchiveLocation=f"s3://{place.src}/archive/")
    with pytest.raises(CleanSettingsError, match="consumer reads the whole bucket"):
        place.cleaner([Consumer("ingest", "")], **same)
    assert run(place.cleaner([Consumer("ingest", "in/")], cleanSourceRetention="1d", **same)) == \
        {"in/a.csv": CleanStatus.ARCHIVED}
    assert place.keys(place.src) == ["archive/in/a.csv"] and place.body(place.src, "archive/in/a.csv") == b"abc"


def test_delete_removes_what_every_consumer_committed_and_keeps_the_rest(place):
    for k in ("in/a.csv", "in/b.csv", "in/c.csv"):
        place.put(k, k.encode())
    place.commit_as("ingest", ["in/a.csv", "in/b.csv"], now_ms() - 3 * DAY)
    place.commit_as("late", ["in/b.csv"], now_ms() - 3 * DAY)
    place.commit_as("ingest", ["in/c.csv"], now_ms() - 3600_000, first=3)  # an hour ago: within the retention
    c = place.cleaner([Consumer("ingest", "in/"), Consumer("late", "in/b")], cleanSource="delete",
                      cleanSourceRetention="1d")
    assert run(c, apply=False) == {"in/a.csv": CleanStatus.DUE, "in/b.csv": CleanStatus.DUE,
                                   "in/c.csv": CleanStatus.RETENTION}
    assert place.keys(place.src) == ["in/a.csv", "in/b.csv", "in/c.csv"]  # a dry run changes nothing
    said = []
    c.progress = said.append
    assert run(c) == {"in/a.csv": CleanStatus.DELETED, "in/b.csv": CleanStatus.DELETED,
                      "in/c.csv": CleanStatus.RETENTION}
    assert place.keys(place.src) == ["in/c.csv"] and place.keys(place.arch) == []
    assert said[:2] == ["clean: read 2 commit markers of consumer ingest", "clean: read 1 commit marker of consumer late"]
    assert said[-1] == "clean: 3 of 3 committed files judged; 1 retention, 2 deleted"  # progress, as a large run says it


def test_in_a_versioned_bucket_the_version_committed_is_the_one_deleted(place):
    place.s3.put_bucket_versioning(Bucket=place.src, VersioningConfiguration={"Status": "Enabled"})
    place.put("in/a.csv", b"abc")
    place.commit_as("ingest", ["in/a.csv"], now_ms() - 2 * DAY)
    assert run(place.cleaner([Consumer("ingest", "in/")], cleanSource="delete", cleanSourceRetention="1d")) == \
        {"in/a.csv": CleanStatus.DELETED}
    versions = place.s3.list_object_versions(Bucket=place.src)
    assert versions.get("Versions", []) == [] and versions.get("DeleteMarkers", []) == []


def test_a_file_overwritten_since_it_was_ingested_is_left_alone_and_reported(place):
    place.put("in/a.csv", b"first")
    place.commit_as("ingest", ["in/a.csv"], now_ms() - 3 * DAY)
    place.put("in/a.csv", b"second, longer")
    rows = []
    # Found once the file falls due (its retention passed): until then the commits alone say "retention".
    place.cleaner([Consumer("ingest", "in/")], cleanSource="archive", sourceArchiveLocation=f"s3://{place.arch}/",
                  cleanSourceRetention="1d").run(True, on_row=rows.append)
    assert [(r.status, "changed since it was ingested" in r.detail) for r in rows] == [(CleanStatus.CHANGED, True)]
    assert place.body(place.src, "in/a.csv") == b"second, longer" and place.keys(place.arch) == []


# ---- an object too big for one CopyObject ----

class FailingPart:
    """The S3 client, but the second part of a copy in parts fails with `code`."""

    def __init__(self, s3, code: str):
        self.s3, self.code = s3, code

    def __getattr__(self, name):
        return getattr(self.s3, name)

    def upload_part_copy(self, **kw):
        if kw["PartNumber"] == 2:
            raise ClientError({"Error": {"Code": self.code, "Message": "injected"}}, "UploadPartCopy")
        return self.s3.upload_part_copy(**kw)


def put_in_parts(place: Place, key: str, parts: list[bytes]) -> None:
    """An object uploaded in parts, as every object over 5 GiB is (its eTag ends in -N)."""
    up = place.s3.create_multipart_upload(Bucket=place.src, Key=key, ContentType="text/csv",
                                          Metadata={"origin": "sensor-7"}, Tagging="team=data%20eng&pii=no")["UploadId"]
    done = [{"PartNumber": n, "ETag": place.s3.upload_part(Bucket=place.src, Key=key, UploadId=up, PartNumber=n,
                                                           Body=body)["ETag"]} for n, body in enumerate(parts, 1)]
    place.s3.complete_multipart_upload(Bucket=place.src, Key=key, UploadId=up, MultipartUpload={"Parts": done})


@pytest.fixture
def small_copy_limit(monkeypatch):
    """Copies in parts from 5 MiB (moto's smallest part) instead of 5 GiB."""
    monkeypatch.setattr(actions, "SINGLE_COPY_LIMIT", 5 << 20)
    monkeypatch.setattr(actions, "PART_BYTES", 5 << 20)


def test_a_file_over_copy_objects_limit_is_archived_in_parts_with_its_metadata_and_tags(place, small_copy_limit):
    parts = [bytes([65 + i]) * (6 << 20) for i in range(2)]  # 12 MiB: parts of 5, 5 and 2 MiB
    put_in_parts(place, "in/big.csv", parts)
    place.commit_as("ingest", ["in/big.csv"], now_ms() - 2 * DAY)
    c = place.cleaner([Consumer("ingest", "in/")], cleanSource="archive", sourceArchiveLocation=f"s3://{place.arch}/",
                      cleanSourceRetention="1d")
    assert run(c) == {"in/big.csv": CleanStatus.ARCHIVED}
    assert place.body(place.arch, "in/big.csv") == b"".join(parts) and place.keys(place.src) == []
    copy = place.s3.head_object(Bucket=place.arch, Key="in/big.csv")
    assert copy["ETag"].endswith('-3"') and copy["ContentType"] == "text/csv"
    assert copy["Metadata"] == {"origin": "sensor-7"}
    tags = place.s3.get_object_tagging(Bucket=place.arch, Key="in/big.csv")["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("pii", "no"), ("team", "data eng")]


@pytest.mark.parametrize("code,status", [("PreconditionFailed", CleanStatus.CHANGED),
                                         ("InternalError", CleanStatus.FAILED)])
def test_a_copy_in_parts_that_fails_keeps_the_source_and_leaves_no_upload_behind(place, small_copy_limit, code, status):
    put_in_parts(place, "in/big.csv", [b"x" * (6 << 20), b"y" * (6 << 20)])
    place.commit_as("ingest", ["in/big.csv"], now_ms() - 2 * DAY)
    c = place.cleaner([Consumer("ingest", "in/")], cleanSource="archive", sourceArchiveLocation=f"s3://{place.arch}/",
                      cleanSourceRetention="1d")
    c.s3 = FailingPart(place.s3, code)
    rows = []
    c.run(True, on_row=rows.append)
    assert [r.status for r in rows] == [status], rows[0].detail
    assert place.keys(place.src) == ["in/big.csv"] and place.keys(place.arch) == []
    assert place.s3.list_multipart_uploads(Bucket=place.arch).get("Uploads", []) == []
    if status == CleanStatus.FAILED:  # the next run, with nothing failing, finishes it ("changed" is final)
        c.s3 = place.s3
        assert run(c) == {"in/big.csv": CleanStatus.ARCHIVED}


# ---- source-state clean, killed between the copy and the delete ----

def outputs_file(place: Place, path, consumers: dict[str, str], **settings) -> str:
    def consumer(name, prefix):
        return {"queueUrl": "-", "queueArn": "-", "dlqUrl": "-", "dlqArn": "-", "jobRoleArn": "-", "prefix": prefix,
                "checkpointUri": f"s3://{place.ck}/checkpoints/{name}/"}
    cleaning = {**settings, "roleArn": "arn:aws:iam::123456789012:role/cleaner",
                "journalUri": f"s3://{place.ck}/source-cleaning/", "eventFilter": {"prefix": "", "suffix": ""}}
    return str(write_outputs_file({"SourceBucketName": place.src, "SourceCleaning": json.dumps(cleaning),
                                   "Consumers": json.dumps({n: consumer(n, p) for n, p in consumers.items()})}, path))


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return source_state(list(argv), out=out), out.getvalue()


@contextmanager
def applying_in_background(outputs: str, endpoint: str) -> Iterator[subprocess.Popen]:
    """`source-state clean --apply` in a process group of its own, SIGKILLed on the way out."""
    run_ = subprocess.Popen(
        [sys.executable, "-c", "import sys; from ops.state.cli import main; sys.exit(main())", "clean", "--apply",
         "--outputs-file", outputs, "--endpoint-url", endpoint],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, env=os.environ.copy())
    try:
        yield run_
    finally:
        os.killpg(run_.pid, signal.SIGKILL)
        run_.wait(timeout=30)
        run_.stderr.close()


def wait_until(done, run_: subprocess.Popen, timeout: float = 60) -> None:
    """Until done() or the timeout, while the run is still running."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline and run_.poll() is None:
        time.sleep(0.1)


def test_a_kill_between_the_copy_and_the_delete_loses_nothing_and_a_rerun_finishes(place, tmp_path):
    place.put("in/a.csv", b"payload")
    place.put("in/new.csv", b"not yet")
    place.commit_as("ingest", ["in/a.csv"], now_ms() - 60_000)
    outputs = outputs_file(place, tmp_path / "cdk-outputs.json", {"ingest": "in/"}, cleanSource="archive",
                           cleanSourceRetention="10s", sourceArchiveLocation=f"s3://{place.arch}/arch/")
    code, text = cli("clean", "--outputs-file", outputs, "--endpoint-url", place.endpoint)
    assert code == 0 and "due" in text and "would archive to" in text and place.keys(place.arch) == []

    # Every DELETE waits (minutes) at the proxy, so the run is killed after its copy, before its delete.
    with FaultProxy(place.endpoint, Faults(delay=1.0, max_delay=600.0),
                    applies=lambda m, p: m == "DELETE") as proxy, \
            applying_in_background(outputs, proxy.endpoint_url) as run_:
        wait_until(lambda: place.keys(place.arch) != [], run_)
        assert place.keys(place.arch) == ["arch/in/a.csv"], run_.stderr.read() if run_.poll() is not None else ""
        time.sleep(0.3)
        assert run_.poll() is None, "the run should be waiting on its delete"
    assert place.body(place.src, "in/a.csv") == b"payload"  # both copies: nothing lost

    code, text = cli("clean", "--apply", "--outputs-file", outputs, "--endpoint-url", place.endpoint)
    assert code == 0
    assert place.keys(place.arch) == ["arch/in/a.csv"] and place.body(place.arch, "arch/in/a.csv") == b"payload"
    assert place.body(place.src, "in/a.csv") is None and place.body(place.src, "in/new.csv") == b"not yet"

    # Afterwards the file's status and time come from the journal; JSON rows for scripts.
    code, text = cli("clean", "--json", "--status", "archived", "--outputs-file", outputs, "--endpoint-url", place.endpoint)
    (row,) = [json.loads(line) for line in text.splitlines()]
    assert row["uri"] == f"s3://{place.src}/in/a.csv" and row["status"] == "archived" and row["at"]
    assert f"copied to s3://{place.arch}/arch/in/a.csv" in row["detail"]
    # A run killed after the delete and before its journal: the archive's copy says what happened.
    place.s3.delete_objects(Bucket=place.ck, Delete={"Objects": [{"Key": k} for k in place.keys(place.ck, "source-cleaning/")]})
    code, text = cli("clean", "--outputs-file", outputs, "--endpoint-url", place.endpoint)
    assert code == 0 and "archived" in text.splitlines()[1]


def test_the_cli_refuses_a_stack_that_does_not_clean(place, tmp_path, capsys):
    path = write_outputs_file({"SourceBucketName": place.src, "Consumers": "{}"}, tmp_path / "cdk-outputs.json")
    code, _ = cli("clean", "--outputs-file", str(path), "--endpoint-url", place.endpoint)
    assert code == 2
    assert "does not clean its source (no SourceCleaning output): set sourceCleaning.cleanSource" in \
        capsys.readouterr().err
