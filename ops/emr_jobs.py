"""Submit the packaged job to EMR Serverless, follow it, list, show and cancel runs.

Pure request building first (no I/O; the tests and `--dry-run` rely on it), then the S3 and EMR
Serverless calls, then the two command lines: `submit-job` (main) and `job-runs` (runs_main).

Every id and ARN comes from the `cdk deploy --outputs-file` JSON; the consumer is chosen by name.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from infra.contract import EMR_LOGS_PREFIX, JOB_ARTIFACTS_PREFIX, checkpoint_prefix, output_prefix
from ops import packaging
from ops.stack_outputs import OutputsError, StackOutputs, load_outputs

DEFAULT_OUTPUTS_FILE = "cdk-outputs.json"
ENV_PYTHON = f"./{packaging.ENV_ARCHIVE_ALIAS}/bin/python"
TERMINAL_STATES = ("SUCCESS", "FAILED", "CANCELLED")
ACTIVE_STATES = ("SUBMITTED", "PENDING", "SCHEDULED", "RUNNING", "QUEUED", "CANCELLING")
DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR = 5


class SubmitError(RuntimeError):
    """A problem the operator can fix; printed without a traceback."""


# ----------------------------------------------------------------------------------------------
# Pure: from outputs, manifest and flags to the StartJobRun request.


@dataclass(frozen=True)
class JobSpec:
    """What the operator asked for; everything else comes from the stack outputs."""
    consumer: str
    format: str
    schema: str
    output: str | None = None
    checkpoint: str | None = None
    partition_by: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    until_drained: bool = False
    region: str | None = None
    name: str | None = None
    trigger_interval: str | None = None
    max_failed_attempts_per_hour: int = DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR
    timeout_minutes: int | None = None
    spark_conf: tuple[str, ...] = ()
    tags: dict = field(default_factory=dict)
    # Only for runs against a local stand-in; on EMR the job reaches AWS's own endpoints.
    job_endpoint_url: str | None = None

    @property
    def mode(self) -> str:
        return "BATCH" if self.until_drained else "STREAMING"

    @property
    def job_name(self) -> str:
        return self.name or f"s3sqs-{self.consumer}"


@dataclass(frozen=True)
class ArtifactLocations:
    bucket: str
    keys: dict  # artifact file name -> S3 key

    def uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.keys[name]}"


def artifact_locations(manifest: dict, bucket: str, prefix: str = JOB_ARTIFACTS_PREFIX) -> ArtifactLocations:
    """jobs/<sha256 prefix>/<file>: the key changes exactly when the content does, so a rebuilt archive
    never overwrites one a running job still reads."""
    keys = {name: f"{prefix}{meta['sha256'][:16]}/{name}" for name, meta in sorted(manifest["artifacts"].items())}
    return ArtifactLocations(bucket, keys)


def default_locations(outputs: StackOutputs, consumer: str) -> tuple[str, str]:
    """(checkpoint, output) under the prefixes the consumer's job role may write."""
    c = outputs.consumer(consumer)
    bucket = None if (c.checkpoint_uri and c.output_uri) else outputs.get("CheckpointBucketName")
    checkpoint = c.checkpoint_uri or f"s3://{bucket}/{checkpoint_prefix(consumer)}"
    output = c.output_uri or f"s3://{bucket}/{output_prefix(consumer)}"
    return checkpoint.rstrip("/"), output.rstrip("/")


def _check_conf(item: str) -> tuple[str, str]:
    if "=" not in item or not item.split("=", 1)[0]:
        raise SubmitError(f"--conf {item!r} must look like key=value")
    if any(c.isspace() for c in item):
        raise SubmitError(f"--conf {item!r} must not contain whitespace")
    k, v = item.split("=", 1)
    return k, v


def spark_submit_parameters(env_uri: str, connector_uri: str, extra_conf: tuple[str, ...] = ()) -> str:
    """The archive and interpreter settings EMR needs, then the operator's own --conf pairs."""
    confs = [
        ("spark.archives", f"{env_uri}#{packaging.ENV_ARCHIVE_ALIAS},"
                           f"{connector_uri}#{packaging.CONNECTOR_ARCHIVE_ALIAS}"),
        ("spark.emr-serverless.driverEnv.PYSPARK_DRIVER_PYTHON", ENV_PYTHON),
        ("spark.emr-serverless.driverEnv.PYSPARK_PYTHON", ENV_PYTHON),
        ("spark.executorEnv.PYSPARK_PYTHON", ENV_PYTHON),
    ]
    fixed = {k for k, _ in confs}
    for item in extra_conf:
        k, v = _check_conf(item)
        if k in fixed:
            raise SubmitError(f"--conf {k} is set by submit-job; it cannot be overridden")
        confs.append((k, v))
    return " ".join(f"--conf {k}={v}" for k, v in confs)


def entry_point_arguments(spec: JobSpec, queue_url: str, checkpoint: str, output: str, region: str | None) -> list[str]:
    """The flags app/job.py takes."""
    args = ["--queue-url", queue_url, "--format", spec.format, "--schema", spec.schema,
            "--checkpoint", checkpoint, "--output", output]
    if spec.partition_by:
        args += ["--partition-by", ",".join(spec.partition_by)]
    if region:
        args += ["--region", region]
    if spec.job_endpoint_url:
        args += ["--endpoint-url", spec.job_endpoint_url]
    if spec.trigger_interval:
        args += ["--trigger-interval", spec.trigger_interval]
    if spec.until_drained:
        args.append("--until-drained")
    for opt in spec.options:
        if "=" not in opt or not opt.split("=", 1)[0].strip():
            raise SubmitError(f"--option {opt!r} must look like key=value")
        args += ["--option", opt]
    args += ["--name", spec.job_name]
    return args


def build_start_job_run_request(
    outputs: StackOutputs, spec: JobSpec, locations: ArtifactLocations, manifest: dict, client_token: str,
) -> dict:
    consumer = outputs.consumer(spec.consumer)  # raises for an unknown consumer, naming the known ones
    checkpoint_default, output_default = default_locations(outputs, spec.consumer)
    checkpoint = (spec.checkpoint or checkpoint_default).rstrip("/")
    output = (spec.output or output_default).rstrip("/")
    if not 1 <= spec.max_failed_attempts_per_hour <= 10:
        raise SubmitError("--max-failed-attempts-per-hour must be between 1 and 10")
    request = {
        "applicationId": outputs.get("EmrApplicationId"),
        "clientToken": client_token,
        "executionRoleArn": consumer.job_role_arn,
        "name": spec.job_name,
        "mode": spec.mode,
        "jobDriver": {
            "sparkSubmit": {
                "entryPoint": locations.uri(manifest["entry_point"]),
                "entryPointArguments": entry_point_arguments(spec, consumer.queue_url, checkpoint, output,
                                                             spec.region),
                "sparkSubmitParameters": spark_submit_parameters(
                    locations.uri(manifest["environment"]), locations.uri(manifest["connector"]), spec.spark_conf),
            }
        },
        "configurationOverrides": {
            "monitoringConfiguration": {
                # The artifacts bucket, next to the code that produced them; the job role may write there.
                "s3MonitoringConfiguration": {"logUri": f"s3://{outputs.get('ArtifactsBucketName')}/{EMR_LOGS_PREFIX}"},
                "cloudWatchLoggingConfiguration": {
                    "enabled": True,
                    "logGroupName": outputs.get("LogGroupName"),
                    "logStreamNamePrefix": spec.consumer,
                },
            }
        },
        "tags": {"s3sqs:consumer": spec.consumer, **spec.tags},
    }
    if spec.mode == "STREAMING":
        # EMR restarts a failed streaming run from its checkpoint, at most this often per hour.
        request["retryPolicy"] = {"maxFailedAttemptsPerHour": spec.max_failed_attempts_per_hour}
        # 0 = never time out: a streaming run is meant to keep going.
        request["executionTimeoutMinutes"] = spec.timeout_minutes if spec.timeout_minutes is not None else 0
    elif spec.timeout_minutes is not None:
        request["executionTimeoutMinutes"] = spec.timeout_minutes
    return request


def validate_request(request: dict) -> None:
    """Check the request against botocore's EMR Serverless model (field names, types, lengths, enums)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("emr-serverless")
    shape = model.operation_model("StartJobRun").input_shape
    report = ParamValidator().validate(request, shape)
    if report.has_errors():
        raise SubmitError("the StartJobRun request is invalid:\n" + report.generate_report())


def local_spark_submit_args(request: dict, local_paths: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Translate a StartJobRun request into a local spark-submit command line and driver environment.

    s3:// artifact URIs are replaced by local paths; `spark.emr-serverless.driverEnv.X=V` becomes the
    environment variable X=V, which is what EMR Serverless sets on its driver. Used by the proof test,
    so the local run gets exactly the settings EMR gets.
    """
    driver = request["jobDriver"]["sparkSubmit"]

    def localize(text: str) -> str:
        for uri, path in local_paths.items():
            text = text.replace(uri, path)
        return text

    argv, env = [], {}
    words = shlex.split(driver.get("sparkSubmitParameters", ""))
    i = 0
    while i < len(words):
        if words[i] == "--conf":
            k, v = words[i + 1].split("=", 1)
            prefix = "spark.emr-serverless.driverEnv."
            if k.startswith(prefix):
                env[k[len(prefix):]] = v
            else:
                argv += ["--conf", f"{k}={localize(v)}"]
            i += 2
        else:
            argv.append(localize(words[i]))
            i += 1
    argv.append(localize(driver["entryPoint"]))
    argv += [localize(a) for a in driver.get("entryPointArguments", [])]
    return argv, env


# ----------------------------------------------------------------------------------------------
# I/O: S3 uploads and EMR Serverless calls.


def resolve_region(region: str | None) -> str:
    """The region boto3 would use (flag, environment or profile); no network call."""
    try:
        import boto3
    except ImportError:
        raise SubmitError(f"boto3 is not installed for {sys.executable}; run `make setup` and use "
                          ".venv/bin/python scripts/...") from None

    resolved = boto3.session.Session(region_name=region).region_name
    if not resolved:
        raise SubmitError("no AWS region: pass --region or set AWS_REGION")
    return resolved


def session_clients(region: str | None, endpoint_url: str | None):
    import boto3
    from botocore.config import Config

    session = boto3.session.Session(region_name=resolve_region(region))
    cfg = Config(retries={"mode": "standard", "max_attempts": 5})
    emr = session.client("emr-serverless", endpoint_url=endpoint_url, config=cfg)
    s3 = session.client("s3", endpoint_url=endpoint_url, config=cfg)
    return session.region_name, emr, s3


class _Progress:
    """Prints each further quarter of a large upload (boto3 calls this from its worker threads)."""

    def __init__(self, total: int, out):
        import threading

        self.total, self.out, self.done, self.shown = total, out, 0, 0
        self.lock = threading.Lock()

    def __call__(self, n: int) -> None:
        with self.lock:
            self.done += n
            quarter = 4 * self.done // max(self.total, 1)
            if quarter > self.shown:
                self.shown = quarter
                print(f"    {25 * quarter}%", file=self.out, flush=True)


def upload_artifacts(s3, dist: Path, manifest: dict, locations: ArtifactLocations, out=None) -> list[str]:
    """Upload each artifact unless the same content is already there; returns the uploaded names."""
    from botocore.exceptions import ClientError

    out = out or sys.stderr
    uploaded = []
    for name, key in locations.keys.items():
        meta = manifest["artifacts"][name]
        try:
            head = s3.head_object(Bucket=locations.bucket, Key=key)
            if head.get("Metadata", {}).get("sha256") == meta["sha256"] and head["ContentLength"] == meta["size"]:
                print(f"  {name}: already at {locations.uri(name)}", file=out, flush=True)
                continue
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                raise SubmitError(f"cannot read s3://{locations.bucket}/{key}: {e}") from None
        print(f"  {name}: uploading {packaging.human(meta['size'])} to {locations.uri(name)}", file=out, flush=True)
        try:
            s3.upload_file(str(Path(dist) / name), locations.bucket, key,
                           ExtraArgs={"Metadata": {"sha256": meta["sha256"]}},
                           Callback=_Progress(meta["size"], out) if meta["size"] > 8 << 20 else None)
        except ClientError as e:
            raise SubmitError(f"upload to {locations.uri(name)} failed: {e}") from None
        uploaded.append(name)
    return uploaded


def check_application(emr, application_id: str, manifest: dict, declared_arch: str | None = None) -> dict:
    """The application exists, runs, and has the CPU dist/ was built for.

    GetApplication's `architecture` decides; the stack's EmrArchitecture output stands in where the
    endpoint leaves it out (moto does).
    """
    from botocore.exceptions import ClientError

    try:
        app = emr.get_application(applicationId=application_id)["application"]
    except ClientError as e:
        raise SubmitError(f"EMR Serverless application {application_id}: {e}") from None
    want = manifest["target"]["emr_architecture"]
    have = app.get("architecture") or declared_arch or "X86_64"
    if have != want:
        raise SubmitError(
            f"application {application_id} runs on {have} but dist/ was built for {want}: "
            f"run scripts/package-job --arch {'aarch64' if have == 'ARM64' else 'x86_64'}"
        )
    if app.get("state") in ("TERMINATED", "TERMINATING"):
        raise SubmitError(f"application {application_id} is {app['state']}; redeploy the stack")
    return app


def checkpoint_of(run: dict) -> str | None:
    args = run.get("jobDriver", {}).get("sparkSubmit", {}).get("entryPointArguments", [])
    if "--checkpoint" in args and args.index("--checkpoint") + 1 < len(args):
        return args[args.index("--checkpoint") + 1].rstrip("/")
    return None


def list_runs(emr, application_id: str, states=(), limit: int | None = None) -> list[dict]:
    """Job run summaries as the API orders them (newest first)."""
    from botocore.exceptions import ClientError

    runs = []
    try:
        for page in emr.get_paginator("list_job_runs").paginate(
            applicationId=application_id, **({"states": list(states)} if states else {})
        ):
            runs += page["jobRuns"]
            if limit is not None and len(runs) >= limit:
                break
    except ClientError as e:
        # moto answers ResourceNotFound for an application that has never had a run; AWS, an empty list.
        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException" and not runs:
            emr.get_application(applicationId=application_id)  # still raises if the application is gone
            return []
        raise
    return runs if limit is None else runs[:limit]


def runs_on_checkpoint(emr, application_id: str, checkpoint: str) -> list[str]:
    """Active runs that use this checkpoint: a second query on it would fight the first over the
    checkpoint, the file index and the queue."""
    found = []
    for summary in list_runs(emr, application_id, ACTIVE_STATES):
        if summary["state"] in ACTIVE_STATES:
            run = emr.get_job_run(applicationId=application_id, jobRunId=summary["id"])["jobRun"]
            if checkpoint_of(run) == checkpoint.rstrip("/"):
                found.append(f"{summary['id']} ({summary['state']})")
    return found


def dashboard_url(emr, application_id: str, run_id: str) -> str | None:
    """The Spark UI link, when the API offers one (not for every state, and not on every endpoint)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return emr.get_dashboard_for_job_run(applicationId=application_id, jobRunId=run_id).get("url")
    except (ClientError, BotoCoreError):
        return None


def wait_for_run(emr, application_id: str, run_id: str, poll_seconds: float = 10.0,
                 timeout_seconds: float | None = None, out=None) -> dict:
    """Print each state change until the run ends; returns the final GetJobRun jobRun."""
    from botocore.exceptions import ClientError

    out = out or sys.stderr
    last, shown_dashboard = None, False
    deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
    while True:
        try:
            run = emr.get_job_run(applicationId=application_id, jobRunId=run_id)["jobRun"]
        except ClientError as e:
            raise SubmitError(f"job run {run_id}: {e}") from None
        state = run["state"]
        if state != last:
            detail = f" ({run['stateDetails']})" if run.get("stateDetails") else ""
            print(f"{time.strftime('%H:%M:%S')} {run_id} {state}{detail}", file=out, flush=True)
            last = state
        if not shown_dashboard and state not in ("SUBMITTED", "PENDING", "SCHEDULED"):
            url = dashboard_url(emr, application_id, run_id)
            if url:
                print(f"dashboard: {url}", file=out, flush=True)
                shown_dashboard = True
        if state in TERMINAL_STATES:
            return run
        if deadline is not None and time.monotonic() > deadline:
            raise SubmitError(f"job run {run_id} still {state} after {timeout_seconds:.0f} s")
        time.sleep(poll_seconds)


# ----------------------------------------------------------------------------------------------
# Command lines.


def _common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outputs-file", default=DEFAULT_OUTPUTS_FILE, metavar="FILE",
                   help=f"`cdk deploy --outputs-file` JSON (default {DEFAULT_OUTPUTS_FILE})")
    p.add_argument("--stack", metavar="NAME", help="stack in the outputs file, when it holds several")
    p.add_argument("--region", help="AWS region of the stack (default: AWS_REGION / profile)")
    p.add_argument("--endpoint-url", help="AWS API endpoint for S3 and EMR Serverless (a local stand-in)")


def _split_csv(value: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in value.split(",") if c.strip())


def submit_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="submit-job",
        description="Upload dist/ to the artifacts bucket and start the job on the EMR Serverless application.",
    )
    _common_args(p)
    p.add_argument("--consumer", required=True, help="consumer name, as in the stack's Consumers output")
    p.add_argument("--format", required=True, choices=["csv", "json", "parquet"], help="format of the S3 files")
    p.add_argument("--schema", required=True, help='DDL schema of the files, e.g. "id LONG, name STRING"')
    p.add_argument("--output", help="output table location (default: the consumer's outputUri)")
    p.add_argument("--checkpoint", help="checkpoint location (default: the consumer's checkpointUri)")
    p.add_argument("--partition-by", type=_split_csv, default=(), metavar="C1,C2", help="output partition columns")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="source option (repeatable)")
    p.add_argument("--trigger-interval", help="micro-batch interval, e.g. '10 seconds'")
    p.add_argument("--until-drained", action="store_true",
                   help="stop when the queue is empty: a BATCH run (default: a STREAMING run that is restarted)")
    p.add_argument("--max-failed-attempts-per-hour", type=int, default=DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR,
                   help="STREAMING retry policy, 1-10 (default 5)")
    p.add_argument("--timeout-minutes", type=int,
                   help="run time limit (default: none for STREAMING, EMR's 12 hours for BATCH)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable), e.g. spark.executor.memory=8g")
    p.add_argument("--name", help="job run name (default s3sqs-<consumer>)")
    p.add_argument("--client-token", help="idempotency token (default: a new one per submission)")
    p.add_argument("--dist", type=Path, default=packaging.DEFAULT_DIST, help="artifacts directory (default dist/)")
    p.add_argument("--dry-run", action="store_true", help="print the StartJobRun request; upload and start nothing")
    p.add_argument("--wait", action="store_true", help="follow the run until it ends; exit 1 unless it succeeds")
    p.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    args = submit_parser().parse_args(argv)
    try:
        outputs = load_outputs(args.outputs_file, args.stack)
        manifest = packaging.load_manifest(args.dist)
        spec = JobSpec(
            consumer=args.consumer, format=args.format, schema=args.schema, output=args.output,
            checkpoint=args.checkpoint, partition_by=args.partition_by, options=tuple(args.option),
            until_drained=args.until_drained, region=resolve_region(args.region), name=args.name,
            trigger_interval=args.trigger_interval, max_failed_attempts_per_hour=args.max_failed_attempts_per_hour,
            timeout_minutes=args.timeout_minutes, spark_conf=tuple(args.conf),
        )
        locations = artifact_locations(manifest, outputs.get("ArtifactsBucketName"))
        request = build_start_job_run_request(outputs, spec, locations, manifest,
                                              args.client_token or uuid.uuid4().hex)
        validate_request(request)
        if args.dry_run:
            print(json.dumps(request, indent=2), file=out)
            return 0
        _, emr, s3 = session_clients(spec.region, args.endpoint_url)
        declared_arch = outputs.values.get("EmrArchitecture")
        app = check_application(emr, request["applicationId"], manifest, declared_arch)
        print(f"application {request['applicationId']} ({app.get('releaseLabel', '?')}, "
              f"{app.get('architecture') or declared_arch or 'X86_64'}, {app.get('state', '?')})", file=sys.stderr)
        checkpoint = checkpoint_of(request)
        busy = runs_on_checkpoint(emr, request["applicationId"], checkpoint)
        if busy:
            raise SubmitError(
                f"{'run' if len(busy) == 1 else 'runs'} {', '.join(busy)} already "
                f"{'uses' if len(busy) == 1 else 'use'} checkpoint {checkpoint}; stop "
                f"{'it' if len(busy) == 1 else 'them'} first (scripts/job-runs cancel RUN_ID --wait) "
                "or choose another --checkpoint"
            )
        print(f"uploading artifacts to s3://{locations.bucket}/", file=sys.stderr, flush=True)
        upload_artifacts(s3, args.dist, manifest, locations)
        from botocore.exceptions import ClientError

        try:
            started = emr.start_job_run(**request)
        except ClientError as e:
            raise SubmitError(f"StartJobRun failed: {e}") from None
        run_id = started["jobRunId"]
        print(f"started {spec.mode} job run {run_id} ({spec.job_name}) for consumer {spec.consumer}", file=sys.stderr)
        print(run_id, file=out, flush=True)
        if not args.wait:
            print(f"follow it with: scripts/job-runs show {run_id}   cancel: scripts/job-runs cancel {run_id}",
                  file=sys.stderr)
            return 0
        run = wait_for_run(emr, request["applicationId"], run_id, args.poll_seconds)
        return _report_end(run)
    except (OutputsError, packaging.PackagingError, SubmitError) as e:
        print(f"submit-job: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped following; the run goes on (scripts/job-runs cancel RUN_ID stops it)", file=sys.stderr)
        return 130


def _report_end(run: dict) -> int:
    state = run["state"]
    if state == "SUCCESS":
        return 0
    detail = run.get("stateDetails") or "no details"
    print(f"job run {run['jobRunId']} ended {state}: {detail}", file=sys.stderr)
    return 1


def runs_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="job-runs", description="List, show and cancel the application's job runs.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="recent job runs, newest first")
    _common_args(ls)
    ls.add_argument("--state", action="append", default=[], help="only runs in this state (repeatable)")
    ls.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    show = sub.add_parser("show", help="one run's details, with its dashboard URL when there is one")
    _common_args(show)
    show.add_argument("run_id")
    cancel = sub.add_parser("cancel", help="cancel a run")
    _common_args(cancel)
    cancel.add_argument("run_id")
    cancel.add_argument("--wait", action="store_true", help="wait until the run has ended")
    cancel.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    return p


def _fmt_time(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else str(value or "")


def runs_main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    args = runs_parser().parse_args(argv)
    from botocore.exceptions import ClientError

    try:
        outputs = load_outputs(args.outputs_file, args.stack)
        app_id = outputs.get("EmrApplicationId")
        _, emr, _ = session_clients(args.region, args.endpoint_url)
        if args.command == "list":
            runs = sorted(list_runs(emr, app_id, args.state), key=lambda r: str(r.get("createdAt") or ""),
                          reverse=True)[: args.limit]
            if not runs:
                print(f"no job runs on application {app_id}", file=out)
                return 0
            print(f"{'RUN ID':<20}  {'STATE':<10}  {'MODE':<9}  {'CREATED (UTC)':<19}  NAME", file=out)
            for r in runs:
                print(f"{r['id']:<20}  {r['state']:<10}  {r.get('mode', ''):<9}  "
                      f"{_fmt_time(r.get('createdAt')):<19}  {r.get('name') or ''}", file=out)
            return 0
        if args.command == "show":
            run = emr.get_job_run(applicationId=app_id, jobRunId=args.run_id)["jobRun"]
            driver = run.get("jobDriver", {}).get("sparkSubmit", {})
            monitoring = run.get("configurationOverrides", {}).get("monitoringConfiguration", {})
            rows = [
                ("run", run["jobRunId"]), ("name", run.get("name")), ("state", run["state"]),
                ("details", run.get("stateDetails")), ("mode", run.get("mode")),
                ("retry policy", json.dumps(run["retryPolicy"]) if run.get("retryPolicy") else None),
                ("attempt", run.get("attempt")), ("created", _fmt_time(run.get("createdAt"))),
                ("updated", _fmt_time(run.get("updatedAt"))), ("release", run.get("releaseLabel")),
                ("role", run.get("executionRole")), ("entry point", driver.get("entryPoint")),
                ("arguments", shlex.join(driver.get("entryPointArguments", [])) or None),
                ("logs (S3)", monitoring.get("s3MonitoringConfiguration", {}).get("logUri")),
                ("logs (CloudWatch)", monitoring.get("cloudWatchLoggingConfiguration", {}).get("logGroupName")),
                ("dashboard", dashboard_url(emr, app_id, args.run_id)),
            ]
            for k, v in rows:
                if v not in (None, ""):
                    print(f"{k + ':':<19}{v}", file=out)
            return 0 if run["state"] not in ("FAILED", "CANCELLED") else 1
        # cancel
        emr.cancel_job_run(applicationId=app_id, jobRunId=args.run_id)
        print(f"cancellation requested for {args.run_id}", file=sys.stderr)
        if args.wait:
            run = wait_for_run(emr, app_id, args.run_id, args.poll_seconds)
            return 0 if run["state"] in ("CANCELLED", "SUCCESS") else 1
        return 0
    except (OutputsError, SubmitError) as e:
        print(f"job-runs: error: {e}", file=sys.stderr)
        return 2
    except ClientError as e:
        print(f"job-runs: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
