"""Every process of the product, run for real against the local stand-in of one deploy shape, with moto
recording each request: the job (driver, executors, schema inference, backfill listing, quarantine, a file
gone before it is read) into each sink, and every operator tool. Each process signs with a key that names
who it plays (devtools.iam.calls.labelled_credentials), so the recording says which principal made each call.

The job runs as submit-job would start it on EMR (the request's own arguments), except for Spark's checkpoint:
a local folder, since a local Spark has no s3:// filesystem (what EMRFS calls there is modelled in
test_contract.py). The source's state, quarantine, schemas and the tables are on the stand-in's S3.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import boto3

from devtools.iam.calls import Call, labelled_credentials, parse_recording
from devtools.local_aws import start_moto_server
from devtools.local_spark import job_command, job_env, log_tail
from infra import STACK_NAME
from infra.local_stand_in import StandIn, deploy_stand_in, synth_template, write_outputs_file
from tests.iam.shapes import ARCHIVE_BUCKET, GLUE_DATABASE, KEY_PREFIX, SUBJECT
from tests.support.emr import stand_in_dist

BIN = Path(sys.executable).parent
REGION = "us-east-1"
SCHEMA = "id LONG, name STRING"

# Who each label plays; the contract test maps each to a principal of the shape it evaluates.
JOB, OPERATOR, CLEANER, ONBOARDER, HARNESS = "JOB", "OPERATOR", "CLEANER", "ONBOARDER", "HARNESS"


def label(kind: str, what: str) -> str:
    """The key label of one run: who it plays, then which run ("job: delta" -> JOB_JOB_DELTA)."""
    return f"{kind}_{re.sub(r'[^A-Z0-9]+', '_', what.upper()).strip('_')}"


@dataclass
class Recording:
    stand_in: StandIn
    calls: list[Call]
    runs: dict[str, str] = field(default_factory=dict)  # what ran -> its label
    work: Path | None = None

    def of(self, what: str) -> list[Call]:
        return [c for c in self.calls if c.label == self.runs[what]]

    def kind(self, what: str) -> str:
        return self.runs[what].split("_", 1)[0]


class Scenario:
    def __init__(self, work: Path, context: dict, spark_python: Path | None = None):
        self.work = work
        self.context = context
        self.spark_python = spark_python
        self.recording_file = work / "recording.jsonl"
        self.runs: dict[str, str] = {}

    # --- processes ---------------------------------------------------------------------------------

    def env(self, key_label: str) -> dict[str, str]:
        env = {**os.environ, **labelled_credentials(key_label), "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
               "AWS_ENDPOINT_URL": self.endpoint}
        env.pop("AWS_PROFILE", None)
        return env

    def tool(self, kind: str, name: str, *args: str, ok=(0,), what: str | None = None) -> subprocess.CompletedProcess:
        what = what or f"{name} {args[0]}"
        self.runs[what] = label(kind, what)
        r = subprocess.run([str(BIN / name), *args], cwd=self.work, env=self.env(self.runs[what]),
                           capture_output=True, text=True, timeout=300)
        if r.returncode not in ok:
            raise AssertionError(f"{name} {' '.join(args)} exited {r.returncode}:\n{r.stdout[-3000:]}\n"
                                 f"{r.stderr[-3000:]}")
        return r

    def client(self, key_label: str, service: str):
        creds = labelled_credentials(key_label)
        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"])

    def job(self, what: str, *extra: str, schema: str | None = SCHEMA, timeout: float = 420) -> None:
        """app/job.py with the arguments submit-job gives it for `ingest`, Spark's checkpoint local."""
        consumer = self.consumer
        name = what.replace(" ", "-")
        # The first run's state is where an EMR run keeps it (the cleaner reads its commit markers there);
        # the table runs' beside it, under the same consumer's checkpoint.
        base = consumer["checkpointUri"].rstrip("/") + ("" if what == "parquet" else f"/{name}")
        checkpoint = self.work / "spark-checkpoints" / name
        args = ["--queue-url", consumer["queueUrl"], "--format", "csv", *(["--schema", schema] if schema else []),
                "--checkpoint", str(checkpoint), "--state-location", f"{base}/source-state",
                "--option", f"quarantineLocation={base}/quarantine", "--option", f"schemaLocation={base}/_schemas",
                "--option", "header=true", "--option", "sqs.longPollingWaitTimeSeconds=1",
                "--endpoint-url", self.endpoint, "--region", REGION, "--until-drained", "--name", name,
                "--trigger-interval", "1 second", *extra]
        log = self.work / f"{name}.log"
        run = f"job: {what}"
        self.runs[run] = label(JOB, run)
        with open(log, "w") as out:
            r = subprocess.run(job_command(*args, python=self.spark_python), cwd=self.work,
                               env={**job_env(self.spark_python), **self.env(self.runs[run])}, stdout=out,
                               stderr=subprocess.STDOUT, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"the job ({what}) exited {r.returncode}:\n{log_tail(log, 60)}")

    # --- the run ------------------------------------------------------------------------------------

    def upload(self, names: list[str], rows: int = 3) -> None:
        s3 = self.client(HARNESS, "s3")
        for i, name in enumerate(names):
            buf = io.StringIO()
            w = csv.writer(buf)
            w.writerow(["id", "name"])
            for r in range(rows):
                w.writerow([i * 100 + r, f"row-{i}-{r}"])
            s3.put_object(Bucket=self.source_bucket, Key=f"{KEY_PREFIX}{name}", Body=buf.getvalue().encode())

    def record(self, *, sinks: bool = True, tools: bool = True) -> Recording:
        template = synth_template(self.context)
        server = start_moto_server(self.work / "moto.log", env={"MOTO_RECORDER_FILEPATH": str(self.recording_file)},
                                   module="devtools.iam.recording_server")
        try:
            self.endpoint = server.endpoint_url
            stand_in = deploy_stand_in(template, self.endpoint, REGION)
            write_outputs_file(stand_in.outputs, self.work / "cdk-outputs.json")
            self.outputs = stand_in.outputs
            self.consumer = json.loads(stand_in.outputs["Consumers"])[SUBJECT]
            self.source_bucket = stand_in.outputs["SourceBucketName"]
            self._post("/moto-api/recorder/start-recording")
            self._run(stand_in, sinks=sinks, tools=tools)
            self._post("/moto-api/recorder/stop-recording")
        finally:
            server.stop()
        return Recording(stand_in, parse_recording(self.recording_file), dict(self.runs), self.work)

    def _post(self, path: str) -> None:
        urllib.request.urlopen(urllib.request.Request(self.endpoint + path, method="POST"), timeout=10).read()

    def _run(self, stand_in: StandIn, *, sinks: bool, tools: bool) -> None:
        s3 = self.client(HARNESS, "s3")
        s3.create_bucket(Bucket=ARCHIVE_BUCKET)  # the operator's own archive bucket (sourceArchiveLocation)
        # Files already there before the job's first start (the backfill lists them), then announced ones, a
        # corrupt one (quarantined) and one deleted before it is read (missing).
        self.upload(["existing-1.csv", "existing-2.csv"])
        if tools:
            dist = stand_in_dist(self.work / "dist")
            self.tool(OPERATOR, "submit-job", "--dist", str(dist), "--consumer", SUBJECT, "--format", "csv",
                      "--schema", SCHEMA, "--option", "includeExistingFiles=true", "--option",
                      f"basePath=s3://{self.source_bucket}/{KEY_PREFIX}", "--apply",
                      what="submit-job --apply")
            emr = self.client(HARNESS, "emr-serverless")
            run = emr.list_job_runs(applicationId=self.outputs["EmrApplicationId"])["jobRuns"][0]["id"]
            self.tool(OPERATOR, "job-runs", "list", "--consumer", SUBJECT)
            self.tool(OPERATOR, "job-runs", "show", run)
            # A run id the application does not know: GetApplication tells it from an application the region lacks.
            self.tool(OPERATOR, "job-runs", "show", "nosuchrun", ok=(2,), what="job-runs show (an unknown run)")
            # What EMR Serverless would have logged for the run, where job-runs logs reads it.
            logs = self.client(HARNESS, "logs")
            stream = f"{SUBJECT}/applications/{self.outputs['EmrApplicationId']}/jobs/{run}/SPARK_DRIVER/stdout"
            logs.create_log_stream(logGroupName=self.consumer["logGroupName"], logStreamName=stream)
            logs.put_log_events(logGroupName=self.consumer["logGroupName"], logStreamName=stream,
                                logEvents=[{"timestamp": int(time.time() * 1000), "message": "batch 0: 3 rows"}])
            self.tool(OPERATOR, "job-runs", "logs", run)
            self.tool(OPERATOR, "job-runs", "cancel", run, "--apply")
        self.upload(["a.csv", "b.csv", "c.csv"])
        s3.put_object(Bucket=self.source_bucket, Key=f"{KEY_PREFIX}corrupt.csv", Body=b"\x00\xff\x00 not csv\n")
        self.upload(["gone.csv"])
        s3.delete_object(Bucket=self.source_bucket, Key=f"{KEY_PREFIX}gone.csv")
        self.job("parquet", "--output", self.consumer["outputUri"].rstrip("/") + "/parquet",
                 "--option", "includeExistingFiles=true", "--option",
                 f"basePath=s3://{self.source_bucket}/{KEY_PREFIX}", "--option", "onBadFile=quarantine")
        if sinks:
            output = self.consumer["outputUri"].rstrip("/")
            self.upload(["d1.csv", "d2.csv"])
            # Without a schema: the source infers it from the first files and stores it under schemaLocation.
            self.job("delta", "--sink", "delta", "--table", f"{output}/delta", "--table-writer", "python", schema=None)
            self.upload(["i1.csv", "i2.csv"])
            self.job("iceberg", "--sink", "iceberg", "--table", f"{GLUE_DATABASE}.events", "--catalog", "glue",
                     "--warehouse", f"{output}/iceberg", "--table-writer", "python")
            if tools:
                self.tool(OPERATOR, "compact-table", "--format", "delta", "--consumer", SUBJECT, "--table",
                          f"{output}/delta", "--target-file-size", "1m", "--apply", what="compact-table delta")
                self.tool(OPERATOR, "compact-table", "--format", "iceberg", "--consumer", SUBJECT, "--table",
                          f"{GLUE_DATABASE}.events", "--target-file-size", "1m", "--apply",
                          what="compact-table iceberg")
        if not tools:
            return
        state = f"{self.consumer['checkpointUri'].rstrip('/')}/source-state"
        self.tool(OPERATOR, "source-state", "summary", "--state-location", state)
        self.tool(OPERATOR, "source-state", "files", "--state-location", state)
        self.tool(OPERATOR, "source-state", "lookup", "--state-location", state, f"{KEY_PREFIX}a.csv")
        # A message in the dead-letter queue, inspected and moved back.
        self.client(HARNESS, "sqs").send_message(QueueUrl=self.consumer["dlqUrl"], MessageBody=json.dumps(
            {"Records": [{"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": self.source_bucket},
                                                                  "object": {"key": f"{KEY_PREFIX}a.csv"}}}]}))
        self.tool(OPERATOR, "redrive-dlq", "inspect", "--consumer", SUBJECT)
        self.tool(OPERATOR, "redrive-dlq", "redrive", "--consumer", SUBJECT, "--apply")
        if "SourceCleaning" in self.outputs:
            time.sleep(1.1)  # past the recording shape's retention
            self.tool(CLEANER, "source-state", "clean", "--apply", what="source-state clean --apply")
            self._scheduled_cleaner(stand_in)
        # Another account's own queue subscribed to the topic (no queue shared), its prefix readable, the key
        # usable through SQS and S3; then revoked.
        partner = ["--consumer-role-arn", "arn:aws:iam::210987654321:role/partner-reader", "--topic-arn",
                   "--subscriber-queue-arn", "arn:aws:sqs:us-east-1:210987654321:partner-events", "--prefix",
                   "partner/", "--force"]
        self.tool(ONBOARDER, "onboard-account", *partner, "--apply", what="onboard-account")
        self.tool(ONBOARDER, "onboard-account", *partner, "--revoke", "--apply", what="onboard-account --revoke")
        # And the deliberate share of a consumer's queue (its policy, the key's): the path --share-queue opens.
        self.tool(ONBOARDER, "onboard-account", "--consumer", "analytics", "--consumer-role-arn",
                  "arn:aws:iam::210987654321:role/analytics-reader", "--share-queue", "--force", "--apply",
                  what="onboard-account --share-queue")

    def _scheduled_cleaner(self, stand_in: StandIn) -> None:
        """The stack's scheduled function's handler, with the environment its template gives it."""
        functions = [r for lid, r in stand_in.resources.items() if lid.startswith("SourceCleanerScheduleFunction")
                     and r["Type"] == "AWS::Lambda::Function"]
        if not functions:
            return
        variables = functions[0]["Properties"]["Environment"]["Variables"]
        code = "from s3sqs.cleaning.scheduled import handler; print(handler({}, None))"
        what = "scheduled source cleaner"
        self.runs[what] = label(CLEANER, what)
        r = subprocess.run([sys.executable, "-c", code], cwd=self.work, capture_output=True, text=True, timeout=300,
                           env={**self.env(self.runs[what]), **variables})
        if r.returncode != 0:
            raise AssertionError(f"the scheduled cleaner failed:\n{r.stderr[-3000:]}")
