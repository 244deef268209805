"""What job runs mean to the operator: their states, the checkpoint a run uses, and how job-runs shows them.

No I/O: these read GetJobRun / ListJobRuns answers that aws.py fetched.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from ops.cli import command_line

TERMINAL_STATES = ("SUCCESS", "FAILED", "CANCELLED")
ACTIVE_STATES = ("SUBMITTED", "PENDING", "SCHEDULED", "RUNNING", "QUEUED", "CANCELLING")
ALL_STATES = ("SUBMITTED", "PENDING", "SCHEDULED", "QUEUED", "RUNNING", "CANCELLING") + TERMINAL_STATES
# Before these end, a run has no Spark UI to link to.
STARTING_STATES = ("SUBMITTED", "PENDING", "SCHEDULED")


# The driver's streams EMR Serverless writes to the run's CloudWatch Logs group.
LOG_STREAMS = ("stdout", "stderr")


def consumer_of(run: dict) -> str | None:
    """The consumer a run was submitted for (submit-job tags every run with it)."""
    return (run.get("tags") or {}).get("s3sqs:consumer")


def driver_log_prefix(run: dict, application_id: str) -> tuple[str, str] | None:
    """(log group, stream-name prefix) of the run's driver logs in CloudWatch Logs, or None when the run does
    not log there. EMR Serverless names each stream <prefix>/applications/<app>/jobs/<run>/.../SPARK_DRIVER/<stream>."""
    cw = run.get("configurationOverrides", {}).get("monitoringConfiguration", {}).get(
        "cloudWatchLoggingConfiguration", {})
    if not cw.get("enabled") or not cw.get("logGroupName"):
        return None
    prefix = cw.get("logStreamNamePrefix")
    head = f"{prefix}/" if prefix else ""
    return cw["logGroupName"], f"{head}applications/{application_id}/jobs/{run['jobRunId']}/"


def is_driver_stream(name: str, stream: str) -> bool:
    return "/SPARK_DRIVER/" in name and name.rstrip("/").rsplit("/", 1)[-1].lower().startswith(stream)


def done_waiting(state: str, until_running: bool = False) -> bool:
    """Whether `--wait` stops following: the run has ended, or (a STREAMING run, which is meant to go on) it runs."""
    return state in TERMINAL_STATES or (until_running and state == "RUNNING")


def checkpoint_of(run: dict) -> str | None:
    """The --checkpoint a run (or a StartJobRun request) passes to app/job.py."""
    args = run.get("jobDriver", {}).get("sparkSubmit", {}).get("entryPointArguments", [])
    if "--checkpoint" in args and args.index("--checkpoint") + 1 < len(args):
        return args[args.index("--checkpoint") + 1].rstrip("/")
    return None


def checkpoint_in_use(busy: list[tuple[str, str]], checkpoint: str, flags: Sequence[str] = ()) -> str:
    """Why a second run on a checkpoint is refused: it would fight the first over the checkpoint, the file
    index and the queue. `busy` is (run id, state) of each active run on it; `flags` are those that found the
    stack, so each cancel command runs as printed."""
    one = len(busy) == 1
    cancels = "; ".join(command_line("job-runs", "cancel", run_id, *flags, "--apply", "--wait") for run_id, _ in busy)
    return (f"{'run' if one else 'runs'} {', '.join(f'{r} ({s})' for r, s in busy)} already "
            f"{'uses' if one else 'use'} checkpoint {checkpoint}; stop {'it' if one else 'them'} first ({cancels}) "
            "or choose another --checkpoint")


def unknown_run(run_id: str, application_id: str, flags: Sequence[str] = ()) -> str:
    """A run id the (existing) application does not know."""
    return (f"no job run {run_id} on application {application_id}; "
            f"`{command_line('job-runs', 'list', *flags)}` shows the runs")


def cancel_succeeded(state: str) -> bool:
    """`job-runs cancel --wait`: the run ended as the operator asked (or had succeeded before the cancel took
    effect); a run that failed first is still reported as not a success."""
    return state in ("CANCELLED", "SUCCESS")


def format_time(value) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else str(value or "")


def runs_table(runs: list[dict]) -> list[str]:
    """`job-runs list`: one line per run summary, under a header."""
    lines = [f"{'RUN ID':<20}  {'STATE':<10}  {'MODE':<9}  {'CREATED (UTC)':<19}  NAME"]
    for r in runs:
        lines.append(f"{r['id']:<20}  {r['state']:<10}  {r.get('mode', ''):<9}  "
                     f"{format_time(r.get('createdAt')):<19}  {r.get('name') or ''}")
    return lines


def run_details(run: dict, dashboard: str | None) -> list[str]:
    """`job-runs show`: one "key: value" line per detail the run has."""
    driver = run.get("jobDriver", {}).get("sparkSubmit", {})
    monitoring = run.get("configurationOverrides", {}).get("monitoringConfiguration", {})
    rows = [
        ("run", run["jobRunId"]), ("name", run.get("name")), ("state", run["state"]),
        ("details", run.get("stateDetails")), ("mode", run.get("mode")),
        ("retry policy", json.dumps(run["retryPolicy"]) if run.get("retryPolicy") else None),
        ("attempt", run.get("attempt")), ("created", format_time(run.get("createdAt"))),
        ("updated", format_time(run.get("updatedAt"))), ("release", run.get("releaseLabel")),
        ("role", run.get("executionRole")), ("entry point", driver.get("entryPoint")),
        ("arguments", shlex.join(driver.get("entryPointArguments", [])) or None),
        ("logs (S3)", monitoring.get("s3MonitoringConfiguration", {}).get("logUri")),
        ("logs (CloudWatch)", monitoring.get("cloudWatchLoggingConfiguration", {}).get("logGroupName")),
        ("dashboard", dashboard),
    ]
    return [f"{k + ':':<19}{v}" for k, v in rows if v not in (None, "")]
