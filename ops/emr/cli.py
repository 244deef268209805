"""The submit-job and job-runs command lines.

submit-job prints the new run's id on stdout and its progress on stderr, so `RUN=$(submit-job … --apply)`
works; job-runs lists, shows and cancels runs. Both find every id and ARN in the stack outputs. Like every
tool here, the commands that change AWS (submitting, cancelling) only show what they would do until --apply.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import uuid
from pathlib import Path

from ops import aws, cli
from ops.emr import SubmitError, preflight, runs
from ops.emr import aws as emr_aws
from ops.emr.request import (
    DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR, JobSpec, build_start_job_run_request, consumer_artifact_locations,
    default_locations,
    validate_request,
)
from ops.packaging.build import DEFAULT_DIST, load_manifest
from s3sqs.job.flags import add_submit_flags

SUBMIT_PROG = "submit-job"
RUNS_PROG = "job-runs"


# ---------------------------------------------------------------- submit-job

def submit_parser() -> argparse.ArgumentParser:
    p = cli.parser(SUBMIT_PROG, "Check the job's flags, then (with --apply) upload dist/ to the artifacts bucket "
                                "and start the job on the EMR Serverless application.")
    cli.add_stack_args(p)
    cli.add_aws_args(p)
    cli.add_consumer_arg(p, required=True)
    # The job's own flags, as app/job.py defines them; --checkpoint and --output default to the consumer's
    # checkpointUri and outputUri, and --until-drained makes a BATCH run (else a STREAMING run, restarted).
    add_submit_flags(p.add_argument_group("the job's flags (app/job.py --help)"))
    p.add_argument("--max-failed-attempts-per-hour", type=int, default=DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR,
                   help=f"STREAMING retry policy, 1-10 (default {DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR})")
    p.add_argument("--timeout-minutes", type=int,
                   help="run time limit (default: none for STREAMING, EMR's 12 hours for BATCH)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable), e.g. spark.executor.memory=8g")
    p.add_argument("--name", help="job run name (default s3sqs-<consumer>)")
    p.add_argument("--client-token", help="idempotency token (default: a new one per submission)")
    p.add_argument("--dist", type=Path, default=DEFAULT_DIST, help="artifacts directory (default dist/)")
    cli.add_apply_args(p, act="upload the artifacts and start the run; without it, the checked StartJobRun "
                              "request is printed")
    p.add_argument("--wait", action="store_true", help="with --apply: follow the run until it ends; exit 1 unless "
                                                       "it succeeds")
    add_dashboard_arg(p)
    p.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    cli.add_debug_arg(p)
    return p


def _submit(args, out) -> int:
    # Pre-flight, before anything is read from AWS: the flags the job would reject fail here, in milliseconds.
    schema = preflight.check_schema(args.schema, args.partition_by)
    options = dict(args.option)
    outputs = cli.stack_outputs(args)
    consumer = outputs.consumer(args.consumer)
    region = aws.session(args.region).region_name
    checkpoint = (args.checkpoint or default_locations(outputs, args.consumer)[0]).rstrip("/")
    preflight.check_options(preflight.job_source_options(args.format, consumer.queue_url, checkpoint, options,
                                                         region=region), schema)
    manifest = load_manifest(args.dist)
    spec = JobSpec(
        # The canonical form: the job's DataStreamReader.schema() refuses `name: type` columns that pass here.
        consumer=args.consumer, format=args.format, schema=schema.ddl if schema else None, output=args.output,
        checkpoint=args.checkpoint, partition_by=args.partition_by, options=tuple("=".join(kv) for kv in args.option),
        until_drained=args.until_drained, region=region, name=args.name,
        trigger_interval=args.trigger_interval, max_failed_attempts_per_hour=args.max_failed_attempts_per_hour,
        timeout_minutes=args.timeout_minutes, spark_conf=tuple(args.conf),
        sink=args.sink, table=args.table, transform=args.transform, target_file_size=args.target_file_size,
        table_writer=args.table_writer,
    )
    locations = consumer_artifact_locations(manifest, outputs, args.consumer)
    request = build_start_job_run_request(outputs, spec, locations, manifest, args.client_token or uuid.uuid4().hex)
    validate_request(request)
    if not args.apply:
        print(json.dumps(request, indent=2), file=out)
        cli.say("dry run: the flags and the request are valid; nothing was uploaded or started. "
                "Add --apply to submit it.")
        return 0
    _, emr, s3 = emr_aws.session_clients(spec.region, args.endpoint_url)
    app_id = request["applicationId"]
    declared_arch = outputs.values.get("EmrArchitecture")
    app = emr_aws.check_application(emr, app_id, manifest, declared_arch)
    cli.say(f"application {app_id} ({app.get('releaseLabel', '?')}, "
            f"{app.get('architecture') or declared_arch or 'X86_64'}, {app.get('state', '?')})")
    checkpoint = runs.checkpoint_of(request)
    busy = emr_aws.runs_on_checkpoint(emr, app_id, checkpoint)
    if busy:
        raise SubmitError(runs.checkpoint_in_use(busy, checkpoint))
    cli.say(f"uploading artifacts to s3://{locations.bucket}/")
    emr_aws.upload_artifacts(s3, args.dist, manifest, locations)
    run_id = emr_aws.start_run(emr, request)
    cli.say(f"started {spec.mode} job run {run_id} ({spec.job_name}) for consumer {spec.consumer}")
    print(run_id, file=out, flush=True)
    if not args.wait:
        cli.say(follow_up_hint(run_id, cli.passthrough(args)))
        return 0
    return _report_end(emr_aws.wait_for_run(emr, app_id, run_id, args.poll_seconds, show_dashboard=args.dashboard))


def follow_up_hint(run_id: str, flags: list[str]) -> str:
    """How to follow and cancel the run, with the flags that found this stack (so the hint runs as printed)."""
    extra = "".join(" " + shlex.quote(f) for f in flags)
    runs = cli.command("job-runs")
    return (f"follow it with: {runs} show {run_id}{extra}\n"
            f"cancel it with: {runs} cancel {run_id}{extra} --apply")


def _report_end(run: dict) -> int:
    """0 for a run that succeeded; otherwise say how it ended, and 1."""
    state = run["state"]
    if state == "SUCCESS":
        return 0
    detail = run.get("stateDetails") or "no details"
    cli.say(f"job run {run['jobRunId']} ended {state}: {detail}")
    return cli.NOT_DONE


def submit_main(argv: list[str] | None = None, out=None) -> int:
    args = submit_parser().parse_args(argv)
    return cli.run(SUBMIT_PROG, lambda: _submit(args, out or sys.stdout), debug=args.debug,
                   interrupted=f"a run that was started goes on ({cli.command('job-runs')} cancel RUN_ID --apply stops it)")


def add_dashboard_arg(p: argparse.ArgumentParser) -> None:
    # The link is pre-signed: whoever holds it opens the Spark UI until it expires, so it is shown only on request.
    p.add_argument("--dashboard", action="store_true",
                   help="also print the run's pre-signed Spark UI link (anyone holding it can open the UI)")


# ---------------------------------------------------------------- job-runs

def runs_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    cli.add_stack_args(common)
    cli.add_aws_args(common)
    cli.add_debug_arg(common)
    p = cli.parser(RUNS_PROG, "List, show and cancel the application's job runs.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{list,show,cancel}")
    ls = sub.add_parser("list", parents=[common], allow_abbrev=False, help="recent job runs, newest first")
    ls.add_argument("--state", action="append", default=[], metavar="STATE",
                    type=cli.choice("a job run state", runs.ALL_STATES, fold=str.upper),
                    help=f"only runs in this state (repeatable): {', '.join(runs.ALL_STATES)}")
    cli.add_limit_arg(ls, what="runs", default=20)
    show = sub.add_parser("show", parents=[common], allow_abbrev=False, help="one run's details")
    show.add_argument("run_id", metavar="RUN_ID")
    add_dashboard_arg(show)
    cancel = sub.add_parser("cancel", parents=[common], allow_abbrev=False, help="cancel a run (with --apply)")
    cancel.add_argument("run_id", metavar="RUN_ID")
    cli.add_apply_args(cancel, act="cancel the run")
    cancel.add_argument("--wait", action="store_true", help="with --apply: wait until the run has ended")
    cancel.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    return p


def _runs(args, out) -> int:
    app_id = cli.stack_outputs(args).get("EmrApplicationId")
    _, emr, _ = emr_aws.session_clients(args.region, args.endpoint_url)
    if args.command == "list":
        found = sorted(emr_aws.list_runs(emr, app_id, args.state), key=lambda r: str(r.get("createdAt") or ""),
                       reverse=True)[: args.limit]
        lines = runs.runs_table(found) if found else [f"no job runs on application {app_id}"]
        print("\n".join(lines), file=out)
        return 0
    if args.command == "show":
        run = emr.get_job_run(applicationId=app_id, jobRunId=args.run_id)["jobRun"]
        dashboard = emr_aws.dashboard_url(emr, app_id, args.run_id) if args.dashboard else None
        print("\n".join(runs.run_details(run, dashboard)), file=out)
        return 0 if run["state"] not in ("FAILED", "CANCELLED") else cli.NOT_DONE
    if not args.apply:
        run = emr.get_job_run(applicationId=app_id, jobRunId=args.run_id)["jobRun"]
        print(f"would cancel job run {args.run_id} ({run.get('name') or 'unnamed'}, {run['state']})", file=out)
        cli.say("dry run: nothing was cancelled. Add --apply to cancel it.")
        return 0
    emr.cancel_job_run(applicationId=app_id, jobRunId=args.run_id)
    cli.say(f"cancellation requested for {args.run_id}")
    if args.wait:
        run = emr_aws.wait_for_run(emr, app_id, args.run_id, args.poll_seconds)
        return 0 if run["state"] in ("CANCELLED", "SUCCESS") else cli.NOT_DONE
    return 0


def runs_main(argv: list[str] | None = None, out=None) -> int:
    args = runs_parser().parse_args(argv)
    return cli.run(RUNS_PROG, lambda: _runs(args, out or sys.stdout), debug=args.debug,
                   interrupted="stopped watching; a cancellation already requested goes ahead")
