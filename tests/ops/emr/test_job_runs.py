"""job-runs: a consumer name checked against the outputs file, a run id the application does not know told apart
from an application the region does not know, and what `cancel --wait` exits with; on a moto server over HTTP."""
from __future__ import annotations

import io
import json
import uuid
from contextlib import redirect_stderr

import boto3
import pytest
from botocore.stub import Stubber

from infra import STACK_NAME
from infra.local_stand_in import write_outputs_file
from ops.emr import SubmitError, runs
from ops.emr import aws as emr_aws
from ops.emr import cli as emr_cli

REGION = "us-east-1"


def consumer_outputs(name: str) -> dict:
    """What the Consumers output holds for a consumer (only its name matters to job-runs)."""
    queue = f"https://sqs.{REGION}.amazonaws.com/123456789012/{STACK_NAME}-{name}"
    return {"queueUrl": queue, "queueArn": f"arn:aws:sqs:{REGION}:123456789012:{STACK_NAME}-{name}",
            "dlqUrl": queue + "-dlq", "dlqArn": f"arn:aws:sqs:{REGION}:123456789012:{STACK_NAME}-{name}-dlq",
            "jobRoleArn": f"arn:aws:iam::123456789012:role/{name}-job", "prefix": f"{name}/"}


@pytest.fixture(scope="module")
def app(moto_endpoint, tmp_path_factory):
    """An application with one run tagged for consumer orders, and the outputs file naming it."""
    emr = boto3.client("emr-serverless", endpoint_url=moto_endpoint, region_name=REGION)
    app_id = emr.create_application(name=f"runs-{uuid.uuid4().hex[:8]}", releaseLabel="emr-7.1.0",
                                    type="SPARK")["applicationId"]
    run_id = emr.start_job_run(applicationId=app_id, executionRoleArn="arn:aws:iam::123456789012:role/job",
                               clientToken=uuid.uuid4().hex, jobDriver={"sparkSubmit": {"entryPoint": "s3://a/job.py"}},
                               tags={"s3sqs:consumer": "orders"})["jobRunId"]
    consumers = {name: consumer_outputs(name) for name in ("orders", "billing")}
    outputs = write_outputs_file({"EmrApplicationId": app_id, "Region": REGION, "Consumers": json.dumps(consumers)},
                                 tmp_path_factory.mktemp("runs") / "cdk-outputs.json", STACK_NAME)
    return outputs, app_id, run_id


def job_runs(outputs, endpoint, *argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        rc = emr_cli.runs_main([*argv, "--outputs-file", str(outputs), "--endpoint-url", endpoint], out=out)
    return rc, out.getvalue(), err.getvalue()


def test_an_unknown_consumer_is_refused_with_the_close_name_before_any_call(app):
    outputs, _, _ = app
    # No endpoint answers there: the name is checked against the outputs file alone.
    rc, out, err = job_runs(outputs, "http://127.0.0.1:9", "list", "--consumer", "ordres")
    assert rc == 2 and out == ""
    assert err == ("job-runs: error: unknown consumer 'ordres' (did you mean 'orders'?); the stack defines: "
                   "billing, orders\n")


def test_a_known_consumer_lists_its_runs(app, moto_endpoint):
    outputs, _, run_id = app
    rc, out, err = job_runs(outputs, moto_endpoint, "list", "--consumer", "orders")
    assert rc == 0 and run_id in out, err
    rc, out, err = job_runs(outputs, moto_endpoint, "list", "--consumer", "billing")
    assert rc == 0 and out.startswith("no job runs on application"), err


@pytest.mark.parametrize("command", ["show", "logs", "cancel"])
def test_a_run_id_the_application_does_not_know_is_said_so_not_blamed_on_the_region(app, moto_endpoint, command):
    outputs, app_id, _ = app
    rc, out, err = job_runs(outputs, moto_endpoint, command, "nosuchrun")
    assert rc == 2 and out == ""
    assert err == (f"job-runs: error: no job run nosuchrun on application {app_id}; `job-runs list --outputs-file "
                   f"{outputs} --region {REGION} --endpoint-url {moto_endpoint}` shows the runs\n")


def test_an_application_the_region_does_not_know_is_blamed_on_the_region(app, moto_endpoint, tmp_path):
    outputs, _, _ = app
    values = json.loads(outputs.read_text())[STACK_NAME]
    gone = write_outputs_file({**values, "EmrApplicationId": "00000000000000ab"}, tmp_path / "o.json", STACK_NAME)
    rc, _, err = job_runs(gone, moto_endpoint, "show", "nosuchrun")
    assert rc == 2 and "Application 00000000000000ab does not exist in region us-east-1" in err
    assert "pass --region, or the --outputs-file" in err


def test_aws_s_answer_for_an_unknown_run_is_told_apart_from_a_missing_application():
    """What AWS answers (the run does not exist, the application does), which moto does not: GetApplication decides."""
    app_id = "00f0000000000001"
    application = {"applicationId": app_id, "name": "a", "releaseLabel": "emr-7.1.0", "type": "SPARK",
                   "arn": f"arn:aws:emr-serverless:{REGION}:123456789012:/applications/{app_id}",
                   "state": "STARTED", "createdAt": 0, "updatedAt": 0}
    emr = boto3.client("emr-serverless", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(emr) as stub:
        stub.add_client_error("get_job_run", "ResourceNotFoundException", "Job run nosuchrun does not exist", 404)
        stub.add_response("get_application", {"application": application}, {"applicationId": app_id})
        with pytest.raises(SubmitError, match=f"^no job run nosuchrun on application {app_id}; `job-runs list` shows"):
            emr_aws.get_run(emr, app_id, "nosuchrun", REGION)
        gone = f"Application {app_id} does not exist"
        stub.add_client_error("get_job_run", "ResourceNotFoundException", gone, 404)
        stub.add_client_error("get_application", "ResourceNotFoundException", gone, 404)
        with pytest.raises(SubmitError, match=f"{gone} in region {REGION}; the ids come from the outputs file"):
            emr_aws.get_run(emr, app_id, "nosuchrun", REGION)


def test_a_cancel_that_ended_cancelled_is_a_success_and_one_that_failed_first_is_not(app, moto_endpoint, monkeypatch):
    assert runs.cancel_succeeded("CANCELLED") and runs.cancel_succeeded("SUCCESS")
    assert not runs.cancel_succeeded("FAILED")
    outputs, app_id, _ = app
    emr = boto3.client("emr-serverless", endpoint_url=moto_endpoint, region_name=REGION)

    def start() -> str:
        return emr.start_job_run(applicationId=app_id, executionRoleArn="arn:aws:iam::123456789012:role/job",
                                 clientToken=uuid.uuid4().hex,
                                 jobDriver={"sparkSubmit": {"entryPoint": "s3://a/job.py"}})["jobRunId"]

    rc, _, err = job_runs(outputs, moto_endpoint, "cancel", start(), "--apply", "--wait", "--poll-seconds", "0.1")
    assert rc == 0 and "CANCELLED" in err
    # A run that failed before the cancel took effect: moto cannot fail one, so its GetJobRun answer says so.
    real = emr_aws.session_clients

    def failing(region, endpoint_url):
        region, client, s3 = real(region, endpoint_url)

        def fail(parsed, **_):
            parsed["jobRun"].update(state="FAILED", stateDetails="Job failed, exit code 1")
        client.meta.events.register("after-call.emr-serverless.GetJobRun", fail)
        return region, client, s3

    monkeypatch.setattr(emr_aws, "session_clients", failing)
    rc, _, err = job_runs(outputs, moto_endpoint, "cancel", start(), "--apply", "--wait", "--poll-seconds", "0.1")
    assert rc == 1 and "FAILED (Job failed, exit code 1)" in err


def test_the_checkpoint_refusal_prints_a_cancel_for_each_run_that_runs_as_printed(monkeypatch):
    monkeypatch.setattr("sys.argv", ["job-runs"])  # on PATH: the hint names the tool by its bare name
    flags = ["--outputs-file", "my outputs.json", "--region", REGION]
    assert runs.checkpoint_in_use([("r1", "RUNNING"), ("r2", "PENDING")], "s3://ck/orders", flags) == (
        "runs r1 (RUNNING), r2 (PENDING) already use checkpoint s3://ck/orders; stop them first "
        f"(job-runs cancel r1 --outputs-file 'my outputs.json' --region {REGION} --apply --wait; "
        f"job-runs cancel r2 --outputs-file 'my outputs.json' --region {REGION} --apply --wait) "
        "or choose another --checkpoint")
