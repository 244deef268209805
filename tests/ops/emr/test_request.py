"""The pure part of submit-job: from outputs, manifest and flags to a StartJobRun request."""
from __future__ import annotations

import json

import pytest

from ops.local_stack.emr_locally import spark_submit_args as local_spark_submit_args

from ops.emr import SubmitError
from ops.emr import aws as emr_aws
from ops.emr import cli as emr_cli
from ops.emr import request as emr_request
from ops.stack_outputs import OutputsError, StackOutputs

ROLE = "arn:aws:iam::123456789012:role/job-ingest"
QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/ingest"
MANIFEST = {
    "entry_point": "job.py", "connector": "s3sqs.zip", "environment": "s3sqs-env-cp311-x86_64.tar.gz",
    "artifacts": {"job.py": {"sha256": "a" * 64, "size": 1}, "s3sqs.zip": {"sha256": "b" * 64, "size": 1},
                  "s3sqs-env-cp311-x86_64.tar.gz": {"sha256": "c" * 64, "size": 1}},
    "target": {"emr_architecture": "X86_64"},
}


def outputs(with_uris: bool = True) -> StackOutputs:
    consumer = {"queueUrl": QUEUE, "queueArn": "arn:aws:sqs:eu-west-1:123456789012:ingest", "dlqUrl": "d",
                "dlqArn": "arn:aws:sqs:eu-west-1:123456789012:ingest-dlq", "jobRoleArn": ROLE, "prefix": ""}
    if with_uris:
        consumer |= {"checkpointUri": "s3://ck/checkpoints/ingest/", "outputUri": "s3://ck/output/ingest/",
                     "artifactsUri": "s3://art/jobs/ingest/", "logUri": "s3://art/emr-logs/ingest/",
                     "logGroupName": "/s3sqs/S/ingest"}
    return StackOutputs("S", {"EmrApplicationId": "00fabc", "ArtifactsBucketName": "art", "CheckpointBucketName": "ck",
                              "Consumers": json.dumps({"ingest": consumer})})


def request(**spec) -> dict:
    s = emr_request.JobSpec(**{"consumer": "ingest", "format": "json", "schema": "id LONG", "region": "eu-west-1",
                            **spec})
    req = emr_request.build_start_job_run_request(
        outputs(), s, emr_request.consumer_artifact_locations(MANIFEST, outputs(), "ingest"), MANIFEST, "token")
    emr_request.validate_request(req)
    return req


def test_streaming_request_is_valid_and_complete():
    req = request(options=("maxFilesPerTrigger=10", "header=true"), spark_conf=("spark.executor.memory=8g",))
    assert req["mode"] == "STREAMING" and req["executionTimeoutMinutes"] == 0
    assert req["retryPolicy"] == {"maxFailedAttemptsPerHour": 5}
    driver = req["jobDriver"]["sparkSubmit"]
    # Under the consumer's own prefixes: another consumer's job role can neither read this code nor
    # write into these logs.
    assert driver["entryPoint"] == f"s3://art/jobs/ingest/{'a' * 16}/job.py"
    assert driver["sparkSubmitParameters"].startswith(
        f"--conf spark.archives=s3://art/jobs/ingest/{'c' * 16}/s3sqs-env-cp311-x86_64.tar.gz#environment,"
        f"s3://art/jobs/ingest/{'b' * 16}/s3sqs.zip#connector ")
    assert req["configurationOverrides"]["monitoringConfiguration"] == {
        "s3MonitoringConfiguration": {"logUri": "s3://art/emr-logs/ingest/"},
        "cloudWatchLoggingConfiguration": {"enabled": True, "logGroupName": "/s3sqs/S/ingest",
                                           "logStreamNamePrefix": "ingest"},
    }
    assert driver["sparkSubmitParameters"].endswith("--conf spark.executor.memory=8g")
    assert driver["entryPointArguments"] == [
        "--queue-url", QUEUE, "--format", "json", "--schema", "id LONG", "--checkpoint", "s3://ck/checkpoints/ingest",
        "--option", "maxFilesPerTrigger=10", "--option", "header=true", "--region", "eu-west-1",
        "--output", "s3://ck/output/ingest", "--name", "s3sqs-ingest"]
    # ... and they are what the job's own parser reads back.
    from s3sqs.job.flags import parse_job_args
    back = parse_job_args(driver["entryPointArguments"])
    assert (back.format, back.options, back.output) == ("json", {"maxFilesPerTrigger": "10", "header": "true"},
                                                        "s3://ck/output/ingest")


def test_batch_request_and_overrides():
    req = request(until_drained=True, timeout_minutes=90, output="s3://lake/t", checkpoint="s3://ck/checkpoints/ingest/x",
                  partition_by=("day", "hour"), name="backfill")
    assert req["mode"] == "BATCH" and "retryPolicy" not in req and req["executionTimeoutMinutes"] == 90
    args = req["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert args[args.index("--output") + 1] == "s3://lake/t"
    assert args[args.index("--partition-by") + 1] == "day,hour" and "--until-drained" in args
    assert req["name"] == "backfill"


def test_defaults_without_consumer_uris_use_the_contract_names():
    assert emr_request.default_locations(outputs(with_uris=False), "ingest") == (
        "s3://ck/checkpoints/ingest", "s3://ck/output/ingest")
    assert emr_request.consumer_places(outputs(with_uris=False), "ingest") == emr_request.ConsumerPlaces(
        "art", "jobs/ingest/", "s3://art/emr-logs/ingest/", "/s3sqs/S/ingest")
    assert emr_request.consumer_places(outputs(with_uris=False), "ingest") == \
        emr_request.consumer_places(outputs(), "ingest")


@pytest.mark.parametrize("spec, message", [
    ({"spark_conf": ("spark.archives=s3://x/y.tar.gz#environment",)}, "set by submit-job"),
    ({"spark_conf": ("spark.driver.memory",)}, "key=value"),
    ({"spark_conf": ("spark.x=a b",)}, "whitespace"),
    ({"options": ("maxFilesPerTrigger",)}, "key=value"),
    ({"max_failed_attempts_per_hour": 11}, "between 1 and 10"),
])
def test_bad_flags_are_named(spec, message):
    with pytest.raises(SubmitError, match=message):
        request(**spec)


def test_unknown_consumer_and_schema_violations():
    with pytest.raises(OutputsError, match="unknown consumer 'billing'; the stack defines: ingest"):
        request(consumer="billing")
    req = request()
    req["name"] = ""
    with pytest.raises(SubmitError, match="Invalid length"):
        emr_request.validate_request(req)


def test_local_translation_keeps_emr_settings():
    req = request(job_endpoint_url="http://127.0.0.1:5000")
    locs = emr_request.consumer_artifact_locations(MANIFEST, outputs(), "ingest")
    local = {locs.uri(n): f"/dist/{n}" for n in MANIFEST["artifacts"]}
    argv, env = local_spark_submit_args(req, local)
    assert env == {"PYSPARK_DRIVER_PYTHON": "./environment/bin/python", "PYSPARK_PYTHON": "./environment/bin/python"}
    assert argv[:4] == ["--conf", "spark.archives=/dist/s3sqs-env-cp311-x86_64.tar.gz#environment,"
                        "/dist/s3sqs.zip#connector", "--conf", "spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python"]
    assert argv[4] == "/dist/job.py" and argv[argv.index("--endpoint-url") + 1] == "http://127.0.0.1:5000"


@pytest.mark.parametrize("show_dashboard", [False, True])
def test_wait_prints_state_changes_and_the_dashboard_url_only_when_asked(show_dashboard):
    """moto has no GetDashboardForJobRun, so this one follows a run through botocore's Stubber. The link is
    pre-signed, so by default it is neither fetched nor printed."""
    import io

    import boto3
    from botocore.stub import Stubber

    emr = boto3.client("emr-serverless", region_name="us-east-1")
    ids = {"applicationId": "00fabc", "jobRunId": "00run"}

    def run(state, details="Job is progressing"):
        job_run = {**ids, "arn": "arn:aws:emr-serverless:us-east-1:123456789012:/applications/00fabc/jobruns/00run",
                   "createdBy": ROLE, "createdAt": "2026-01-01", "updatedAt": "2026-01-01",
                   "executionRole": ROLE, "state": state, "releaseLabel": "emr-spark-8.0.0",
                   "jobDriver": {"sparkSubmit": {"entryPoint": "s3://art/job.py"}}}
        return {"jobRun": {**job_run, "stateDetails": details}}

    out = io.StringIO()
    with Stubber(emr) as stub:
        stub.add_response("get_job_run", run("PENDING"), ids)
        stub.add_response("get_job_run", run("RUNNING"), ids)
        if show_dashboard:
            stub.add_response("get_dashboard_for_job_run", {"url": "https://spark-ui.example/00run"}, ids)
        stub.add_response("get_job_run", run("RUNNING"), ids)
        stub.add_response("get_job_run", run("FAILED", "Job failed, exit code 1"), ids)
        final = emr_aws.wait_for_run(emr, "00fabc", "00run", poll_seconds=0, out=out, show_dashboard=show_dashboard)
        stub.assert_no_pending_responses()
    text = out.getvalue()
    assert [line.split()[2] for line in text.splitlines() if " 00run " in line] == ["PENDING", "RUNNING", "FAILED"]
    assert ("https://spark-ui.example/00run" in text) is show_dashboard and "FAILED (Job failed, exit code 1)" in text
    assert emr_cli._report_end(final) == 1


def test_table_sinks_and_the_transform_are_passed_to_the_job():
    manifest = {**MANIFEST, "transform_modules": ["shop_rules"]}
    s = emr_request.JobSpec(consumer="ingest", format="csv", schema="id LONG, day STRING", region="eu-west-1",
                            sink="iceberg", table="raw_lake.orders", transform="shop_rules.orders:tidy",
                            target_file_size="256m", partition_by=("day",))
    req = emr_request.build_start_job_run_request(
        outputs(), s, emr_request.consumer_artifact_locations(manifest, outputs(), "ingest"), manifest, "token")
    emr_request.validate_request(req)
    args = req["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    pairs = dict(zip(args[::2], args[1::2]))
    assert (pairs["--sink"], pairs["--table"], pairs["--transform"], pairs["--target-file-size"]) == (
        "iceberg", "raw_lake.orders", "shop_rules.orders:tidy", "256m")
    # The tables live under the consumer's output prefix, which its job role may write.
    assert pairs["--output"] == "s3://ck/output/ingest"
    assert "--sink" not in request()["jobDriver"]["sparkSubmit"]["entryPointArguments"]  # parquet: as before


def conf_pairs(req) -> dict:
    params = req["jobDriver"]["sparkSubmit"]["sparkSubmitParameters"].split()
    return dict(p.split("=", 1) for p in params if p != "--conf")


def test_tables_use_sparks_own_writers_with_emrs_bundled_jars_unless_python_is_asked_for():
    req = request(sink="iceberg", table="raw_lake.orders", region="eu-west-1")
    args = req["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    assert args[args.index("--table-writer") + 1] == "spark"
    conf = conf_pairs(req)
    assert conf["spark.jars"] == "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
    assert conf["spark.sql.catalog.s3sqs.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert conf["spark.sql.catalog.s3sqs.warehouse"] == "s3://ck/output/ingest"
    assert conf_pairs(request(sink="delta"))["spark.jars"].endswith("/delta-spark.jar,/usr/share/aws/delta/lib/"
                                                                     "delta-storage.jar")
    python = request(sink="delta", table_writer="python")
    assert "spark.jars" not in conf_pairs(python)
    assert python["jobDriver"]["sparkSubmit"]["entryPointArguments"][-2:] != ["--table-writer", "spark"]
    assert "spark.jars" not in conf_pairs(request())  # parquet: Spark's file sink, as before


@pytest.mark.parametrize("spec, message", [
    ({"sink": "iceberg"}, "--sink iceberg needs --table namespace.table"),
    ({"sink": "iceberg", "table": "Raw.Orders"}, "stores names in lower case"),
    ({"sink": "delta", "table": "s3a://lake/t"}, "write s3://"),
    ({"sink": "delta", "target_file_size": "huge"}, "--target-file-size must be a size like 512m.*got 'huge'"),
    ({"transform": "shop_rules:tidy"}, r"module 'shop_rules' is not in dist/.*package-job --transform-module"),
])
def test_sink_mistakes_fail_at_submission(spec, message):
    with pytest.raises(SubmitError, match=message):
        request(**spec)
