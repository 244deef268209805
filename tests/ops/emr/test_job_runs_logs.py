"""`job-runs logs`: a run's driver log from its CloudWatch Logs group, on a moto server over HTTP.

EMR Serverless names each stream <logStreamNamePrefix>/applications/<app>/jobs/<run>/…/SPARK_DRIVER/<stdout|stderr>;
moto runs nothing, so the test writes the streams a run would have, executors' and another run's among them."""
from __future__ import annotations

import io
import json
import time
import uuid
from contextlib import redirect_stderr

import boto3
import pytest

from infra import STACK_NAME
from infra.local_stand_in import write_outputs_file
from ops.emr import cli as emr_cli
from tests.ops.emr.test_job_runs import consumer_outputs

REGION = "us-east-1"


@pytest.fixture(scope="module")
def logged_run(moto_endpoint, tmp_path_factory):
    emr = boto3.client("emr-serverless", endpoint_url=moto_endpoint, region_name=REGION)
    logs = boto3.client("logs", endpoint_url=moto_endpoint, region_name=REGION)
    # moto knows no emr-spark-* release; the release plays no part in where a run logs.
    app = emr.create_application(name=f"logs-{uuid.uuid4().hex[:8]}", releaseLabel="emr-7.1.0",
                                 type="SPARK")["applicationId"]
    group = f"/s3sqs/test-{uuid.uuid4().hex[:8]}/orders"
    logs.create_log_group(logGroupName=group)

    def start(cloudwatch: bool, consumer: str = "orders") -> str:
        monitoring = {"cloudWatchLoggingConfiguration": {"enabled": True, "logGroupName": group,
                                                         "logStreamNamePrefix": "orders"}} if cloudwatch else \
            {"s3MonitoringConfiguration": {"logUri": "s3://artifacts/emr-logs/orders/"}}
        return emr.start_job_run(applicationId=app, executionRoleArn="arn:aws:iam::123456789012:role/job",
                                 clientToken=uuid.uuid4().hex, jobDriver={"sparkSubmit": {"entryPoint": "s3://a/job.py"}},
                                 configurationOverrides={"monitoringConfiguration": monitoring},
                                 tags={"s3sqs:consumer": consumer})["jobRunId"]

    run, other, no_cloudwatch = start(True), start(True, "billing"), start(False)
    now = int(time.time() * 1000) - 60_000  # CloudWatch Logs refuses events older than its retention

    def stream(run_id: str, tail: str, lines: list[tuple[int, str]]) -> None:
        name = f"orders/applications/{app}/jobs/{run_id}/{tail}"
        logs.create_log_stream(logGroupName=group, logStreamName=name)
        logs.put_log_events(logGroupName=group, logStreamName=name,
                            logEvents=[{"timestamp": now + t, "message": m} for t, m in lines])

    # Two attempts of a streaming run: lines come out in time order across them.
    stream(run, "attempts/1/SPARK_DRIVER/stdout", [(1, "[job] batch 0: 1 files"), (3, "[job] batch 1: 2 files")])
    stream(run, "attempts/2/SPARK_DRIVER/stdout", [(5, "[job] batch 2: 4 files")])
    stream(run, "attempts/1/SPARK_DRIVER/stderr", [(2, "WARN something")])
    stream(run, "attempts/1/SPARK_EXECUTOR/1/stdout", [(4, "executor line")])
    stream(other, "SPARK_DRIVER/stdout", [(1, "another run")])
    consumers = {name: consumer_outputs(name) for name in ("orders", "billing")}
    outputs = write_outputs_file({"EmrApplicationId": app, "Region": REGION, "Consumers": json.dumps(consumers)},
                                 tmp_path_factory.mktemp("logs") / "cdk-outputs.json", STACK_NAME)
    return outputs, run, no_cloudwatch, other


def job_runs(outputs, endpoint, *argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        rc = emr_cli.runs_main([*argv, "--outputs-file", str(outputs), "--endpoint-url", endpoint], out=out)
    return rc, out.getvalue(), err.getvalue()


def test_logs_print_the_driver_s_lines_of_every_attempt_in_order(logged_run, moto_endpoint):
    outputs, run, _, _ = logged_run
    rc, out, err = job_runs(outputs, moto_endpoint, "logs", run)
    assert rc == 0, err
    assert out.splitlines() == ["[job] batch 0: 1 files", "[job] batch 1: 2 files", "[job] batch 2: 4 files"]
    rc, out, _ = job_runs(outputs, moto_endpoint, "logs", run, "--stream", "stderr")
    assert out.splitlines() == ["WARN something"]
    rc, out, _ = job_runs(outputs, moto_endpoint, "logs", run, "--limit", "1", "--json")
    (line,) = [json.loads(x) for x in out.splitlines()]
    assert line["message"] == "[job] batch 2: 4 files" and line["stream"].endswith("attempts/2/SPARK_DRIVER/stdout")
    # --follow on a run that has ended prints what is there and returns.
    rc, out, _ = job_runs(outputs, moto_endpoint, "logs", run, "--follow", "--poll-seconds", "0.1")
    assert rc == 0 and len(out.splitlines()) == 3


def test_a_run_that_does_not_log_to_cloudwatch_says_where_its_logs_are(logged_run, moto_endpoint):
    outputs, _, no_cloudwatch, _ = logged_run
    rc, out, err = job_runs(outputs, moto_endpoint, "logs", no_cloudwatch)
    assert rc == 2 and out == ""
    assert "does not log to CloudWatch Logs; its logs are under s3://artifacts/emr-logs/orders/" in err


def test_show_and_list_speak_json(logged_run, moto_endpoint):
    outputs, run, _, _ = logged_run
    rc, out, _ = job_runs(outputs, moto_endpoint, "show", run, "--json")
    assert rc == 0 and json.loads(out)["jobRunId"] == run
    rc, out, _ = job_runs(outputs, moto_endpoint, "list", "--json")
    assert rc == 0 and run in [json.loads(x)["id"] for x in out.splitlines()]


def test_list_narrows_to_one_consumer_s_runs(logged_run, moto_endpoint):
    outputs, run, no_cloudwatch, other = logged_run
    rc, out, _ = job_runs(outputs, moto_endpoint, "list", "--consumer", "orders", "--json")
    listed = {json.loads(x)["id"] for x in out.splitlines()}
    assert rc == 0 and {run, no_cloudwatch} <= listed and other not in listed
