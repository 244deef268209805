"""The S3 and EMR Serverless calls of submit-job and job-runs: upload artifacts, check the application,
list, follow and look up job runs."""
from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from ops import aws
from ops.cli import command
from ops.emr import SubmitError, runs
from ops.emr.request import ArtifactLocations
from ops.packaging.build import human


def session_clients(region: str | None, endpoint_url: str | None):
    """(the region, an EMR Serverless client, an S3 client); uploads and polls get more retries than the default."""
    session = aws.session(region)
    emr, s3 = (aws.client(session, svc, endpoint_url, max_attempts=5) for svc in ("emr-serverless", "s3"))
    return session.region_name, emr, s3


class _Progress:
    """Prints each further quarter of a large upload (boto3 calls this from its worker threads)."""

    def __init__(self, total: int, out):
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
            if _denied(e):  # S3's answer for a missing key too, to a caller without s3:ListBucket on the bucket
                print(f"  {name}: cannot tell whether it is at {locations.uri(name)} (HEAD answered 403: no "
                      "s3:ListBucket or s3:GetObject there); uploading it, which is harmless: its key is its "
                      "content's digest", file=out, flush=True)
            elif aws.error_code(e) not in ("404", "NoSuchKey", "NotFound"):
                raise SubmitError(f"cannot read s3://{locations.bucket}/{key}: {e}") from None
        print(f"  {name}: uploading {human(meta['size'])} to {locations.uri(name)}", file=out, flush=True)
        try:
            s3.upload_file(str(Path(dist) / name), locations.bucket, key,
                           ExtraArgs={"Metadata": {"sha256": meta["sha256"]}},
                           Callback=_Progress(meta["size"], out) if meta["size"] > 8 << 20 else None)
        except ClientError as e:
            raise SubmitError(f"upload to {locations.uri(name)} failed: {e}") from None
        uploaded.append(name)
    return uploaded


def _denied(e: ClientError) -> bool:
    """A 403 (a HEAD's answer has no body, so botocore's code is the status itself)."""
    status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status == 403 or aws.error_code(e) in ("403", "AccessDenied", "Forbidden")


def not_found_in_region(what: str, region: str | None, e: ClientError) -> SubmitError:
    """An id from the outputs file that the region does not know: most often the wrong region."""
    return SubmitError(f"{what}: {e.response.get('Error', {}).get('Message') or e} in region {region}; the ids "
                       "come from the outputs file, so the stack is likely in another region: pass --region, or "
                       "the --outputs-file of the stack deployed in this one")


def get_application(emr, application_id: str, region: str | None = None) -> dict:
    """GetApplication; an application the region does not know is most often the wrong region."""
    try:
        return emr.get_application(applicationId=application_id)["application"]
    except ClientError as e:
        if aws.error_code(e) == "ResourceNotFoundException":
            raise not_found_in_region(f"EMR Serverless application {application_id}", region, e) from None
        raise SubmitError(f"EMR Serverless application {application_id}: {e}") from None


def get_run(emr, application_id: str, run_id: str, region: str | None = None,
            flags: Sequence[str] = ()) -> dict:
    """GetJobRun. For a run it does not find, AWS says the run does not exist and moto that the application does
    not: GetApplication tells which, so only a missing application is blamed on the region or outputs file."""
    try:
        return emr.get_job_run(applicationId=application_id, jobRunId=run_id)["jobRun"]
    except ClientError as e:
        if aws.error_code(e) not in ("ResourceNotFoundException", "ValidationException"):
            raise
    get_application(emr, application_id, region)
    raise SubmitError(runs.unknown_run(run_id, application_id, flags))


def print_logs(logs, emr, application_id: str, run: dict, stream: str, *, follow: bool, limit: int | None,
               as_json: bool, poll_seconds: float, out=None) -> int:
    """Print the driver's log lines of a run (the newest `limit`), and with `follow` the new ones until the run
    ends. Lines of every attempt come in time order."""
    out = out or sys.stdout
    where = runs.driver_log_prefix(run, application_id)
    if where is None:
        monitoring = run.get("configurationOverrides", {}).get("monitoringConfiguration", {})
        s3 = monitoring.get("s3MonitoringConfiguration", {})
        raise SubmitError(f"job run {run['jobRunId']} does not log to CloudWatch Logs; its logs are under "
                          f"{s3.get('logUri', 'its S3 logUri')}")
    group, prefix = where
    tokens: dict[str, str | None] = {}

    def emit(newest: int | None = None) -> int:
        events = sorted((e["timestamp"], name, e["message"].rstrip("\n"))
                        for name in _driver_streams(logs, group, prefix, stream)
                        for e in _new_events(logs, group, name, tokens))
        for ts, name, message in events[-newest:] if newest else events:
            print(json.dumps({"timestamp": ts, "stream": name, "message": message}) if as_json else message,
                  file=out, flush=True)
        return len(events)

    if not emit(limit) and not follow:
        print(f"no {stream} lines yet in {group} under {prefix}", file=sys.stderr, flush=True)
    while follow:
        ended = runs.done_waiting(get_run(emr, application_id, run["jobRunId"])["state"])
        emit()  # after the state: what the run wrote before it ended is printed too
        if ended:
            break
        time.sleep(poll_seconds)
    return 0


def _driver_streams(logs, group: str, prefix: str, stream: str) -> list[str]:
    names = []
    try:
        for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=group, logStreamNamePrefix=prefix):
            names += [s["logStreamName"] for s in page.get("logStreams", [])]
    except ClientError as e:
        if aws.error_code(e) == "ResourceNotFoundException":
            raise SubmitError(f"log group {group} does not exist: is the stack deployed in this region?") from None
        raise
    return sorted(n for n in names if runs.is_driver_stream(n, stream))


def _new_events(logs, group: str, name: str, tokens: dict) -> list[dict]:
    """The events of one stream since the last call (GetLogEvents' forward token), oldest first."""
    events = []
    while True:
        kwargs = {"logGroupName": group, "logStreamName": name, "startFromHead": True}
        if tokens.get(name):
            kwargs["nextToken"] = tokens[name]
        page = logs.get_log_events(**kwargs)
        events += page.get("events", [])
        token = page.get("nextForwardToken")
        if not page.get("events") or token == tokens.get(name):
            tokens[name] = token
            return events
        tokens[name] = token


def check_application(emr, application_id: str, manifest: dict, declared_arch: str | None = None,
                      region: str | None = None) -> dict:
    """The application exists, runs, and has the CPU dist/ was built for.

    GetApplication's `architecture` decides; the stack's EmrArchitecture output stands in where the
    endpoint leaves it out (moto does).
    """
    app = get_application(emr, application_id, region)
    want = manifest["target"]["emr_architecture"]
    have = app.get("architecture") or declared_arch or "X86_64"
    if have != want:
        raise SubmitError(
            f"application {application_id} runs on {have} but dist/ was built for {want}: "
            f"run {command('package-job')} --arch {'aarch64' if have == 'ARM64' else 'x86_64'}"
        )
    if app.get("state") in ("TERMINATED", "TERMINATING"):
        raise SubmitError(f"application {application_id} is {app['state']}; redeploy the stack")
    return app


def list_runs(emr, application_id: str, states=(), limit: int | None = None, region: str | None = None) -> list[dict]:
    """Job run summaries as the API orders them (newest first)."""
    summaries: list[dict] = []
    try:
        for page in emr.get_paginator("list_job_runs").paginate(
            applicationId=application_id, **({"states": list(states)} if states else {})
        ):
            summaries += page["jobRuns"]
            if limit is not None and len(summaries) >= limit:
                break
    except ClientError as e:
        # moto answers ResourceNotFound for an application that has never had a run; AWS, an empty list.
        if aws.error_code(e) == "ResourceNotFoundException" and not summaries:
            get_application(emr, application_id, region)  # still raises if the application is gone
            return []
        if aws.error_code(e) == "ResourceNotFoundException":
            raise not_found_in_region(f"EMR Serverless application {application_id}", region, e) from None
        raise
    return summaries if limit is None else summaries[:limit]


def runs_on_checkpoint(emr, application_id: str, checkpoint: str) -> list[tuple[str, str]]:
    """Active runs that use this checkpoint, as (run id, state)."""
    found = []
    for summary in list_runs(emr, application_id, runs.ACTIVE_STATES):
        if summary["state"] in runs.ACTIVE_STATES:
            run = emr.get_job_run(applicationId=application_id, jobRunId=summary["id"])["jobRun"]
            if runs.checkpoint_of(run) == checkpoint.rstrip("/"):
                found.append((summary["id"], summary["state"]))
    return found


def dashboard_url(emr, application_id: str, run_id: str) -> str | None:
    """The Spark UI link, when the API offers one (not for every state, and not on every endpoint).

    Only a convenience next to the run's state, so an error here means "no link", never a failed command.
    """
    try:
        return emr.get_dashboard_for_job_run(applicationId=application_id, jobRunId=run_id).get("url")
    except (ClientError, BotoCoreError):
        return None


def wait_for_run(emr, application_id: str, run_id: str, poll_seconds: float = 10.0,
                 timeout_seconds: float | None = None, out=None, show_dashboard: bool = False,
                 until_running: bool = False) -> dict:
    """Print each state change until the run ends (or, with until_running, until it runs); returns the last
    GetJobRun jobRun.

    With show_dashboard, also the pre-signed Spark UI link once the run has one (never by default: the link
    opens the UI for whoever holds it)."""
    out = out or sys.stderr
    last, shown_dashboard = None, not show_dashboard
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
        if not shown_dashboard and state not in runs.STARTING_STATES:
            url = dashboard_url(emr, application_id, run_id)
            if url:
                print(f"dashboard: {url}", file=out, flush=True)
                shown_dashboard = True
        if runs.done_waiting(state, until_running):
            return run
        if deadline is not None and time.monotonic() > deadline:
            raise SubmitError(f"job run {run_id} still {state} after {timeout_seconds:.0f} s")
        time.sleep(poll_seconds)


def start_run(emr, request: dict) -> str:
    """StartJobRun; returns the new run's id."""
    try:
        return emr.start_job_run(**request)["jobRunId"]
    except ClientError as e:
        raise SubmitError(f"StartJobRun failed: {e}") from None
