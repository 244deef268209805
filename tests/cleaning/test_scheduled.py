"""The stack's scheduled source cleaner (s3sqs.cleaning.scheduled), its Lambda handler run against the moto
server over HTTP with the configuration the stack would give it: what is due is archived, the rest waits."""
from __future__ import annotations

import json
import uuid

import boto3
import pytest

from s3sqs.cleaning import scheduled
from s3sqs.cleaning.rule import Consumer
from s3sqs.config.clean import parse_clean_settings
from s3sqs.core.errors import UsageError
from s3sqs.core.files import S3File
from s3sqs.core.units import now_ms
from s3sqs.state import markers
from s3sqs.state.store import S3Store

DAY_MS = 86_400_000


class LambdaContext:
    def __init__(self, remaining_ms: int):
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_a_scheduled_run_archives_what_every_consumer_committed_and_leaves_the_rest(moto_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)  # boto3's own setting: the handler makes a plain client
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    run = uuid.uuid4().hex[:8]
    source, checkpoints, archive = f"src-{run}", f"ck-{run}", f"arch-{run}"
    for b in (source, checkpoints, archive):
        s3.create_bucket(Bucket=b)
    files = {}
    for key in ("all/a.json", "analytics/b.json"):
        r = s3.put_object(Bucket=source, Key=key, Body=b'{"x": 1}\n')
        files[key] = S3File(source, key, 9, r["ETag"].strip('"'))
    # ingest reads the whole bucket and committed both two days ago; analytics (analytics/) has committed nothing.
    ingest, analytics = (f"s3://{checkpoints}/checkpoints/{n}/source-state" for n in ("ingest", "analytics"))
    markers.write(S3Store(ingest, s3), markers.marker_of(1, 2, now_ms() - 2 * DAY_MS, files.values()))
    settings = parse_clean_settings({"cleanSource": "archive", "cleanSourceRetention": "1d",
                                     "sourceArchiveLocation": f"s3://{archive}/landing/"})
    config = scheduled.config_json(settings, source, [(Consumer("ingest", ""), ingest),
                                                      (Consumer("analytics", "analytics/"), analytics)],
                                   f"s3://{checkpoints}/source-cleaning/")
    monkeypatch.setenv(scheduled.ENV, json.dumps(config))

    counts = scheduled.handler({"source": "aws.events"}, LambdaContext(900_000))

    assert counts == {"archived": 1, "waiting": 1}
    assert s3.get_object(Bucket=archive, Key="landing/all/a.json")["Body"].read() == b'{"x": 1}\n'
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=source).get("Contents", [])] == ["analytics/b.json"]
    # The next run finds it in the journal: nothing is cleaned twice.
    assert scheduled.handler({}, LambdaContext(900_000)) == {"archived": 1, "waiting": 1}


def test_a_run_out_of_time_takes_no_key_and_a_wrong_configuration_names_what_is_wrong(moto_endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    run = uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=f"ck-{run}")
    state = f"s3://ck-{run}/checkpoints/ingest/source-state"
    markers.write(S3Store(state, s3), markers.marker_of(1, 1, now_ms() - 2 * DAY_MS,
                                                        [S3File(f"src-{run}", "a.json", 1, "e")]))
    settings = parse_clean_settings({"cleanSource": "delete", "cleanSourceRetention": "1d"})
    monkeypatch.setenv(scheduled.ENV, json.dumps(scheduled.config_json(
        settings, f"src-{run}", [(Consumer("ingest", ""), state)], f"s3://ck-{run}/source-cleaning/")))
    assert scheduled.handler({}, LambdaContext(30_000)) == {}  # under a minute left: it stops before any key

    monkeypatch.setenv(scheduled.ENV, json.dumps({"settings": {"cleanSource": "delete"}}))
    with pytest.raises(UsageError, match="S3SQS_CLEANER lacks 'consumers'"):
        scheduled.handler({}, LambdaContext(900_000))
