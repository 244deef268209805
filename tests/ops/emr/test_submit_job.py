"""submit-job and job-runs against a moto server holding the stack's own topology.

The topology comes from the synthesized CDK template (infra.local_stand_in), so the outputs file is
the one a real `cdk deploy --outputs-file` would write, with the same keys.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
import shlex
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path

import boto3
import pytest

from infra.local_stand_in import deploy_to_moto, synth_template, write_outputs_file
from ops.packaging import build
from ops.emr import aws as emr_aws
from ops.emr import cli as emr_cli
from ops.emr import request as emr_request
from ops.stack_outputs import load_outputs
from tests.ops.conftest import REGION

pytestmark = pytest.mark.dist

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent  # where make setup installs the tools
CONSUMER = "analytics"
SCHEMA = "id LONG, name STRING"


@pytest.fixture(scope="module")
def stack(moto_server, tmp_path_factory):
    moto_server.reset()
    outputs = deploy_to_moto(synth_template(), moto_server.endpoint_url, REGION)
    path = write_outputs_file(outputs, tmp_path_factory.mktemp("cdk") / "cdk-outputs.json")
    return outputs, path


@pytest.fixture
def wire(monkeypatch):
    """Records the StartJobRun body as it goes over the wire to the moto server.

    `fail_runs()` rewrites the state in GetJobRun responses that moto really returned: moto's runs
    are SUCCESS at once and it has no API to make one fail, so only that field is replaced.
    """
    sent, hooks = [], []
    real = emr_aws.session_clients

    def capture(request, **_):
        # applicationId travels in the URL path (/applications/{id}/jobruns), the rest in the body.
        app_id = request.url.split("/applications/", 1)[1].split("/", 1)[0]
        sent.append({"applicationId": app_id, **json.loads(request.body)})

    def clients(region, endpoint_url):
        region, emr, s3 = real(region, endpoint_url)
        emr.meta.events.register("before-send.emr-serverless.StartJobRun", capture)
        for event, handler in hooks:
            emr.meta.events.register(event, handler)
        return region, emr, s3

    class Wire:
        requests = sent

        @staticmethod
        def runs_stay_running():
            """moto's runs end at once, so its ListJobRuns is asked without the state filter and the
            runs it really holds are reported RUNNING; GetJobRun (their arguments) stays real."""
            def drop_filter(params, **_):
                params.pop("states", None)

            def running(parsed, **_):
                for r in parsed.get("jobRuns", []):
                    r["state"] = "RUNNING"
            hooks.append(("provide-client-params.emr-serverless.ListJobRuns", drop_filter))
            hooks.append(("after-call.emr-serverless.ListJobRuns", running))

        @staticmethod
        def fail_runs(details="Job failed, exit code 1. Driver: ModuleNotFoundError: No module named 's3sqs'"):
            def fail(parsed, **_):
                if "jobRun" in parsed:
                    parsed["jobRun"]["state"] = "FAILED"
                    parsed["jobRun"]["stateDetails"] = details
            hooks.append(("after-call.emr-serverless.GetJobRun", fail))

    monkeypatch.setattr(emr_aws, "session_clients", clients)
    return Wire


def submit(outputs_file, dist, endpoint, *extra):
    out, err = io.StringIO(), io.StringIO()
    argv = ["--outputs-file", str(outputs_file), "--consumer", CONSUMER, "--format", "csv", "--schema", SCHEMA,
            "--dist", str(dist), "--region", REGION, "--endpoint-url", endpoint, "--poll-seconds", "0.1", *extra]
    with redirect_stderr(err):
        rc = emr_cli.submit_main(argv, out=out)
    return rc, out.getvalue(), err.getvalue()


def test_submit_uploads_artifacts_and_sends_the_dry_run_request(stack, built_dist, moto_endpoint, wire):
    outputs, outputs_file = stack
    consumer = json.loads(outputs["Consumers"])[CONSUMER]
    common = ("--client-token", "tok-1", "--option", "maxFilesPerTrigger=100", "--partition-by", "name")

    rc, dry, _ = submit(outputs_file, built_dist.dist, moto_endpoint, "--dry-run", *common)
    assert rc == 0
    printed = json.loads(dry)
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=moto_endpoint)
    assert s3.list_objects_v2(Bucket=outputs["ArtifactsBucketName"], Prefix="jobs/").get("KeyCount", 0) == 0

    rc, out, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply", "--wait", *common)
    assert rc == 0, err
    assert wire.requests == [printed]  # the dry run printed exactly what was sent
    req = printed
    assert req["applicationId"] == outputs["EmrApplicationId"]
    assert req["executionRoleArn"] == consumer["jobRoleArn"]
    assert req["mode"] == "STREAMING" and req["retryPolicy"] == {"maxFailedAttemptsPerHour": 5}
    assert req["executionTimeoutMinutes"] == 0
    monitoring = req["configurationOverrides"]["monitoringConfiguration"]
    # The consumer's own log prefix and log group, as the stack outputs name them.
    assert monitoring["s3MonitoringConfiguration"]["logUri"] == consumer["logUri"] == \
        f"s3://{outputs['ArtifactsBucketName']}/emr-logs/{CONSUMER}/"
    assert monitoring["cloudWatchLoggingConfiguration"] == {
        "enabled": True, "logGroupName": consumer["logGroupName"], "logStreamNamePrefix": CONSUMER}
    driver = req["jobDriver"]["sparkSubmit"]
    params = driver["sparkSubmitParameters"].split()
    env_key = f"jobs/{CONSUMER}/{built_dist.artifact(built_dist.target.env_archive_name).sha256[:16]}/" \
              f"{built_dist.target.env_archive_name}"
    art = outputs["ArtifactsBucketName"]
    assert f"spark.archives=s3://{art}/{env_key}#environment," \
           f"s3://{art}/jobs/{CONSUMER}/{built_dist.artifact('s3sqs.zip').sha256[:16]}/s3sqs.zip#connector" in params
    for conf in ("spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON", "spark.emr-serverless.driverEnv.PYSPARK_PYTHON",
                 "spark.executorEnv.PYSPARK_PYTHON"):
        assert f"{conf}=./environment/bin/python" in params
    args = driver["entryPointArguments"]
    flag = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    assert flag["--queue-url"] == consumer["queueUrl"]
    assert flag["--checkpoint"] == consumer["checkpointUri"].rstrip("/")
    assert flag["--output"] == consumer["outputUri"].rstrip("/")
    # The schema travels in the canonical form every Spark entry point reads.
    assert flag["--schema"] == "`id` BIGINT, `name` STRING" and flag["--format"] == "csv" and flag["--region"] == REGION
    assert flag["--option"] == "maxFilesPerTrigger=100" and flag["--partition-by"] == "name"
    assert "--until-drained" not in args

    # What moto stored for the run is what was sent.
    run_id = out.strip()
    emr = boto3.client("emr-serverless", region_name=REGION, endpoint_url=moto_endpoint)
    run = emr.get_job_run(applicationId=outputs["EmrApplicationId"], jobRunId=run_id)["jobRun"]
    assert run["jobDriver"] == req["jobDriver"] and run["executionRole"] == consumer["jobRoleArn"]
    assert "SUCCESS" in err

    # The uploaded artifacts are dist/'s bytes, under content-addressed keys.
    for a in built_dist.artifacts:
        locations = emr_request.consumer_artifact_locations(build.load_manifest(built_dist.dist),
                                                            load_outputs(outputs_file), CONSUMER)
        key = next(k for k in locations.keys.values() if k.endswith("/" + a.name))
        assert key.startswith(f"jobs/{CONSUMER}/")
        body = s3.get_object(Bucket=art, Key=key)
        assert hashlib.sha256(body["Body"].read()).hexdigest() == a.sha256
        assert body["Metadata"]["sha256"] == a.sha256

    # A second submission of the same dist/ uploads nothing.
    rc, _, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--until-drained", "--apply")
    assert rc == 0 and "uploading" not in err.replace("uploading artifacts", "") and "already at" in err
    batch = wire.requests[-1]
    assert batch["mode"] == "BATCH" and "retryPolicy" not in batch and "executionTimeoutMinutes" not in batch
    assert "--until-drained" in batch["jobDriver"]["sparkSubmit"]["entryPointArguments"]


def test_missing_outputs_file(tmp_path, built_dist, moto_endpoint):
    rc, _, err = submit(tmp_path / "nope.json", built_dist.dist, moto_endpoint)
    assert rc == 2
    assert "outputs file" in err and "not found" in err and "cdk deploy --outputs-file" in err


def test_unknown_consumer_names_the_known_ones(stack, built_dist, moto_endpoint):
    _, outputs_file = stack
    argv = ["--outputs-file", str(outputs_file), "--consumer", "billing", "--format", "csv", "--schema", SCHEMA,
            "--dist", str(built_dist.dist), "--dry-run"]
    proc = subprocess.run([str(Path(sys.executable).parent / "submit-job"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown consumer 'billing'" in proc.stderr and "analytics" in proc.stderr and "ingest" in proc.stderr
    argv[argv.index("billing")] = "ingst"
    proc = subprocess.run([str(Path(sys.executable).parent / "submit-job"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown consumer 'ingst' (did you mean 'ingest'?)" in proc.stderr


def test_missing_dist_says_to_package(stack, tmp_path, moto_endpoint):
    _, outputs_file = stack
    rc, _, err = submit(outputs_file, tmp_path / "dist", moto_endpoint, "--apply")
    assert rc == 2 and "run package-job" in err


def test_a_preview_needs_no_build(stack, tmp_path, moto_endpoint):
    """Before package-job: the request is checked and shown, with the names package-job will use and a
    placeholder where each artifact's digest goes."""
    outputs, outputs_file = stack
    rc, out, err = submit(outputs_file, tmp_path / "dist", moto_endpoint)
    assert rc == 0, err
    spark = json.loads(out)["jobDriver"]["sparkSubmit"]
    prefix = f"s3://{outputs['ArtifactsBucketName']}/jobs/{CONSUMER}/<package-job>/"
    assert spark["entryPoint"] == prefix + "job.py"
    assert f"{prefix}s3sqs-env-cp311-x86_64.tar.gz#environment" in spark["sparkSubmitParameters"]
    assert "the artifact keys below hold a placeholder" in err and "Run package-job to build dist/" in err


def test_failed_run_exits_nonzero_with_details(stack, built_dist, moto_endpoint, wire):
    _, outputs_file = stack
    wire.fail_runs()
    rc, out, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply", "--wait", "--until-drained")
    assert rc == 1
    assert f"job run {out.strip()} ended FAILED" in err and "No module named 's3sqs'" in err


def test_wrong_architecture_is_refused(stack, built_dist, moto_endpoint, tmp_path):
    """moto's GetApplication omits `architecture`, so the stack's EmrArchitecture output decides here."""
    outputs, _ = stack
    other = "ARM64" if built_dist.target.emr_architecture == "X86_64" else "X86_64"
    outputs_file = write_outputs_file({**outputs, "EmrArchitecture": other}, tmp_path / "o.json")
    rc, _, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply")
    assert rc == 2 and f"runs on {other}" in err and "package-job --arch" in err


def test_job_runs_list_show_cancel(stack, built_dist, moto_endpoint):
    outputs, outputs_file = stack
    rc, out, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply")
    assert rc == 0
    run_id = out.strip()
    base = ["--outputs-file", str(outputs_file), "--region", REGION, "--endpoint-url", moto_endpoint]
    # The hint after submitting runs as printed: it keeps the flags that found the stack and the endpoint.
    assert f"follow it with: job-runs show {run_id} {' '.join(base)}" in err
    assert f"cancel it with: job-runs cancel {run_id} {' '.join(base)} --apply" in err

    def runs(*argv):
        proc = subprocess.run([str(Path(sys.executable).parent / "job-runs"), *argv],
                              capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    rc, listing, err = runs("list", *base)
    assert rc == 0, err
    assert run_id in listing and "s3sqs-analytics" in listing
    rc, shown, _ = runs("show", *base, run_id)
    assert rc == 0 and "state:" in shown and "SUCCESS" in shown and "entry point:" in shown
    assert f"s3://{outputs['ArtifactsBucketName']}/emr-logs/{CONSUMER}/" in shown
    assert "dashboard:" not in shown  # a pre-signed link only with --dashboard
    rc, out, err = runs("cancel", *base, run_id)
    assert rc == 0 and f"would cancel job run {run_id} (s3sqs-analytics, SUCCESS)" in out
    assert "dry run: nothing was cancelled. Add --apply to cancel it." in err
    rc, _, err = runs("cancel", *base, run_id, "--apply", "--wait", "--poll-seconds", "0.1")
    assert rc == 0 and "CANCELLED" in err
    rc, shown, _ = runs("show", *base, run_id)
    assert rc == 1 and "CANCELLED" in shown
    rc, listing, _ = runs("list", *base, "--state", "CANCELLED")
    assert run_id in listing
    rc, _, err = runs("show", *base, "00000000000000000")
    assert rc == 2 and "error" in err
    rc, _, err = runs("list", *base, "--state", "RUNNNING")
    assert rc == 2 and "'RUNNNING' is not a job run state (did you mean 'RUNNING'?)" in err


def test_second_run_on_the_same_checkpoint_is_refused(stack, built_dist, moto_endpoint, wire, monkeypatch):
    outputs, outputs_file = stack
    rc, first, _ = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply")
    assert rc == 0
    first = first.strip()
    wire.runs_stay_running()
    sent = len(wire.requests)
    monkeypatch.setattr(sys, "argv", [str(BIN / "submit-job")])  # run by path: hints name job-runs beside it
    rc, _, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--apply")
    # Every run this module started is on that checkpoint; all of them are named.
    assert rc == 2 and f"{first} (RUNNING)" in err and "checkpoints/analytics; stop" in err
    assert len(wire.requests) == sent  # nothing was started
    # The way out it prints runs as printed: with the flags that found the stack, and --apply, it cancels.
    cancels = re.search(r"; stop (?:it|them) first \((.*)\) or choose another --checkpoint$", err.strip()).group(1)
    (cancel,) = [c for c in cancels.split("; ") if f" {first} " in c]
    assert cancel == shlex.join([str(BIN / "job-runs"), "cancel", first, "--outputs-file", str(outputs_file),
                                 "--region", REGION, "--endpoint-url", moto_endpoint, "--apply", "--wait"])
    proc = subprocess.run(shlex.split(cancel), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and f"{first} CANCELLED" in proc.stderr, proc.stderr
    emr = boto3.client("emr-serverless", region_name=REGION, endpoint_url=moto_endpoint)
    assert emr.get_job_run(applicationId=outputs["EmrApplicationId"], jobRunId=first)["jobRun"]["state"] == "CANCELLED"
    other = load_outputs(outputs_file).consumer(CONSUMER).checkpoint_uri + "second"
    rc, _, err = submit(outputs_file, built_dist.dist, moto_endpoint, "--checkpoint", other, "--apply")
    assert rc == 0, err


@pytest.mark.parametrize("extra, message", [
    (["--schema", "id LONG, name STRNG"],
     "submit-job: error: --schema: unknown type 'STRNG' for column 'name' at character 15"),
    (["--partition-by", "day"], "submit-job: error: --partition-by: column 'day' is not in --schema; its columns are: "
                                "id, name"),
    (["--option", "maxFilesPerTriger=5"],
     "submit-job: error: --option: unknown option 'maxFilesPerTriger': neither a source option nor a reader "
     "option of fileFormat csv; did you mean 'maxFilesPerTrigger'?"),
    (["--option", "heder=true"], "did you mean 'header'?"),
    (["--option", "maxFilesPerTrigger=many"], "submit-job: error: --option: option 'maxFilesPerTrigger'"),
    (["--option", "partitionColumns=Name"],
     "submit-job: error: --option partitionColumns: column 'Name' is not in --schema (did you mean 'name'?)"),
    (["--option", "header"], "argument --option: 'header' must look like key=value"),
    (["--format", "jsn"], "argument --format: 'jsn' is not a file format (did you mean 'json'?)"),
    (["--trigger-interval", "ten seconds"], "argument --trigger-interval: 'ten seconds' is not a duration"),
    # What would live on the job's container and vanish with it, after the messages were deleted.
    (["--checkpoint", "ck/"], "submit-job: error: --checkpoint ck/: an EMR run needs an s3:// location under "
                              "s3://checkpointsbucket"),
    (["--output", "out/"], "submit-job: error: --output out/: an EMR run needs an s3:// location"),
    (["--option", "stateLocation=state/"], "submit-job: error: --option stateLocation state/: an EMR run needs an "
                                           "s3:// location"),
    (["--sink", "delta", "--table", "lake.orders"], "submit-job: error: --table lake.orders: an EMR run needs"),
    (["--output", "s3://someone-else/out"], "submit-job: error: --output s3://someone-else/out: outside the "
                                            "consumer's prefixes"),
    (["--option", "quarantineLocation=s3://checkpointsbucket6ba0c50d/checkpoints/ingest/q"],
     "--option quarantineLocation s3://checkpointsbucket6ba0c50d/checkpoints/ingest/q: outside the consumer's"),
    # A flag and an option that say two things.
    (["--option", "fileFormat=json"], "submit-job: error: --option fileFormat=json clashes with --format csv"),
    (["--option", "queueUrl=https://sqs.us-east-1.amazonaws.com/999999999999/other"],
     "clashes with --consumer analytics, whose queue is http://"),
    (["--option", "cloudFiles.format=json"], "submit-job: error: --option cloudFiles.format=json clashes with --format csv"),
    # Another place than the consumer's is refused under an Auto Loader name too.
    (["--option", "cloudFiles.schemaLocation=s3://elsewhere/s"], "--option cloudFiles.schemaLocation s3://elsewhere/s: "
                                                                 "outside the consumer's prefixes"),
    # Columns a format cannot hold: refused naming column and format (JSON reads MAP as Spark does).
    (["--schema", "id LONG, m MAP<STRING, STRING>"], "submit-job: error: --schema: column 'm' is MAP, but CSV holds "
                                                     "no nested values"),
    (["--schema", "id LONG, s STRUCT<a: INT>"], "column 's' is STRUCT, but CSV holds no nested values"),
    # Iceberg only in the consumer's Glue database (analytics has none in cdk.json).
    (["--sink", "iceberg", "--table", "raw_lake.orders"],
     "consumer 'analytics' has no icebergGlueDatabase in cdk.json, so its job role has no Glue access"),
    (["--region", "eu-west-1"], "--region eu-west-1, but stack S3SqsStreaming in"),
])
def test_preflight_refuses_what_the_job_would_refuse_before_any_aws_call(stack, tmp_path, wire, extra, message):
    """Even with --apply, without dist/ and with no reachable endpoint: nothing is read from AWS, nothing uploaded
    or started; one line on stderr."""
    _, outputs_file = stack
    argv = ["--outputs-file", str(outputs_file), "--consumer", CONSUMER, "--format", "csv", "--schema", SCHEMA,
            "--dist", str(tmp_path / "no-dist"), "--endpoint-url", "http://127.0.0.1:9", "--apply", *extra]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        try:
            rc = emr_cli.submit_main(argv, out=out)
        except SystemExit as e:  # argparse's own errors (--format) end the parser
            rc = e.code
    assert rc == 2 and message in err.getvalue(), err.getvalue()
    assert "Traceback" not in err.getvalue() and out.getvalue() == "" and wire.requests == []
    if not message.startswith("argument"):
        assert err.getvalue().count("\n") == 1


def test_preflight_runs_in_the_script_and_in_a_dry_run_too(stack, tmp_path):
    _, outputs_file = stack
    argv = ["--outputs-file", str(outputs_file), "--consumer", CONSUMER, "--format", "csv",
            "--schema", "id LONG, name STRNG", "--dist", str(tmp_path / "no-dist"), "--dry-run"]
    proc = subprocess.run([str(Path(sys.executable).parent / "submit-job"), *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("submit-job: error: --schema: unknown type 'STRNG' for column 'name' at character 15 "
                           "near 'id LONG, name STRNG'; did you mean STRING?\n")


def test_debug_shows_the_traceback_of_a_preflight_error(stack, tmp_path):
    _, outputs_file = stack
    err = io.StringIO()
    with redirect_stderr(err):
        rc = emr_cli.submit_main(["--outputs-file", str(outputs_file), "--consumer", CONSUMER, "--format", "csv",
                                  "--schema", "id LONG,", "--dist", str(tmp_path), "--debug"], out=io.StringIO())
    assert rc == 2 and "Traceback" in err.getvalue()
    assert err.getvalue().rstrip().endswith("remove the trailing ','")


def test_a_schema_with_name_colon_type_columns_is_sent_in_the_form_the_job_s_reader_takes(stack, built_dist):
    _, outputs_file = stack
    rc, dry, err = submit(outputs_file, built_dist.dist, "http://127.0.0.1:9", "--format", "json", "--schema",
                          "id: LONG, tags: ARRAY<STRING>, `order date` DATE COMMENT 'local'")
    assert rc == 0, err
    assert "dry run: the flags and the request are valid; nothing was uploaded or started. Add --apply" in err
    args = json.loads(dry)["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert args[args.index("--schema") + 1] == "`id` BIGINT, `tags` ARRAY<STRING>, `order date` DATE COMMENT 'local'"


def test_a_map_column_passes_for_json(stack, tmp_path):
    """JSON's reader reads MAP columns as Spark's does (tests/reading/formats/test_parity_json.py, "map and struct at
    depth"), so they are not refused."""
    _, outputs_file = stack
    rc, out, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9", "--format", "json",
                          "--schema", "id LONG, m MAP<STRING, BIGINT>")
    assert rc == 0, err


def test_iceberg_is_checked_against_the_consumer_s_glue_database(stack, tmp_path):
    outputs, _ = stack
    consumers = json.loads(outputs["Consumers"])
    consumers[CONSUMER]["icebergGlueDatabase"] = "raw_lake"
    outputs_file = write_outputs_file({**outputs, "Consumers": json.dumps(consumers)}, tmp_path / "o.json")
    base = ("--sink", "iceberg")
    rc, _, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9", *base, "--table", "lake.orders")
    assert rc == 2 and "may only keep Iceberg tables in Glue database 'raw_lake'" in err
    assert "use --table raw_lake.orders" in err
    rc, _, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9", *base, "--table", "raw_lake.orders")
    assert rc == 0, err


def test_a_streaming_wait_ends_once_the_run_runs():
    from ops.emr.runs import done_waiting

    assert done_waiting("RUNNING", until_running=True) and not done_waiting("RUNNING")
    assert not done_waiting("SCHEDULED", until_running=True) and not done_waiting("PENDING", until_running=True)
    assert all(done_waiting(s) and done_waiting(s, until_running=True) for s in ("SUCCESS", "FAILED", "CANCELLED"))


def test_a_backfill_is_refused_where_the_consumer_s_job_role_may_not_list(stack, tmp_path):
    """The preview (no --apply) refuses what the job role could not list, before anything is read from AWS."""
    outputs, outputs_file = stack
    source = outputs["SourceBucketName"]
    prefix = json.loads(outputs["Consumers"])[CONSUMER]["prefix"]
    assert prefix == "analytics/"
    rc, out, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9",
                          "--option", "includeExistingFiles=true", "--option", "basePath=s3://someone-else/landing/")
    assert rc == 2 and out == ""
    assert err == (f"submit-job: error: --option includeExistingFiles=true lists basePath s3://someone-else/landing/, "
                   f"but consumer 'analytics''s job role may list and read only s3://{source}/analytics/ (the stack's "
                   f"source bucket, under the consumer's prefix); use --option basePath=s3://{source}/analytics/ or a "
                   "location under it\n")
    rc, _, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9",
                        "--option", "backfillInterval=1d", "--option", f"basePath=s3://{source}/")
    assert rc == 2 and f"lists basePath s3://{source}/, but consumer 'analytics''s job role" in err
    rc, out, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9",
                          "--option", "includeExistingFiles=true", "--option", f"basePath=s3://{source}/analytics/2026/")
    assert rc == 0 and json.loads(out)["applicationId"] == outputs["EmrApplicationId"], err
    # An inventory report in a bucket of its own: the run may go, with a warning of the grant it needs.
    report = "s3://inventory-reports/source/daily/2026-11-26T01-00Z/manifest.json"
    rc, out, err = submit(outputs_file, tmp_path / "dist", "http://127.0.0.1:9",
                          "--option", f"backfillFromInventory={report}", "--option", f"basePath=s3://{source}/analytics/")
    assert rc == 0 and out
    role = json.loads(outputs["Consumers"])[CONSUMER]["jobRoleArn"]
    assert (f"warning: --option backfillFromInventory={report}: the stack grants consumer 'analytics''s job role no "
            f"read of s3://inventory-reports/ (it reads only s3://{source}/analytics/); grant it ({role}) "
            "s3:GetObject") in err
