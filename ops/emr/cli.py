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
from dataclasses import dataclass
from pathlib import Path

from ops import aws, cli
from ops.emr import SubmitError, preflight, runs
from ops.emr import aws as emr_aws
from ops.emr.request import (
    DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR, PREVIEW_DIGEST, ArtifactLocations, JobSpec, build_start_job_run_request,
    consumer_artifact_locations, default_locations, preview_manifest, validate_request,
)
from ops.packaging.build import DEFAULT_DIST, load_manifest
from ops.stack_outputs import StackOutputs
from s3sqs.config.options import source_options_help
from s3sqs.job.flags import add_submit_flags

SUBMIT_PROG = "submit-job"
RUNS_PROG = "job-runs"


# ---------------------------------------------------------------- submit-job

def submit_parser() -> argparse.ArgumentParser:
    p = cli.parser(SUBMIT_PROG, "Check the job's flags, then (with --apply) upload dist/ to the artifacts bucket "
                                "and start the job on the EMR Serverless application.")
    add_run_flags(p)
    p.add_argument("--max-failed-attempts-per-hour", type=int, default=DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR,
                   help=f"STREAMING retry policy, 1-10 (default {DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR})")
    p.add_argument("--timeout-minutes", type=int,
                   help="run time limit (default: none for STREAMING, EMR's 12 hours for BATCH)")
    p.add_argument("--client-token", help="idempotency token (default: a new one per submission)")
    cli.add_apply_args(p, act="upload the artifacts and start the run; without it, the checked StartJobRun "
                              "request is printed")
    p.add_argument("--wait", action="store_true",
                   help="with --apply: follow the run until a STREAMING run is RUNNING, or a BATCH run "
                        "(--until-drained) ends; exit 1 if it fails or is cancelled")
    add_dashboard_arg(p)
    p.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    cli.add_debug_arg(p)
    return p


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """What a run is made of, for submit-job and `local-stack run-job`: the stack, the consumer, the job's flags."""
    cli.add_stack_args(p)
    cli.add_aws_args(p)
    cli.add_consumer_arg(p, required=True)
    p.epilog = source_options_help()
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    # The job's own flags, as app/job.py defines them; --checkpoint and --output default to the consumer's
    # checkpointUri and outputUri, and --until-drained makes a BATCH run (else a STREAMING run, restarted).
    add_submit_flags(p.add_argument_group("the job's flags (app/job.py --help)"))
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable), e.g. spark.executor.memory=8g")
    p.add_argument("--name", help="job run name (default s3sqs-<consumer>)")
    p.add_argument("--dist", type=Path, default=DEFAULT_DIST, help="artifacts directory (default dist/)")


@dataclass(frozen=True)
class Submission:
    """A checked StartJobRun request and what it was made from."""
    outputs: StackOutputs
    spec: JobSpec
    manifest: dict
    locations: ArtifactLocations
    request: dict


def prepare_submission(args, job_endpoint_url: str | None = None) -> Submission:
    """The job's flags checked as the job checks them, then the StartJobRun request submit-job would send
    (`local-stack run-job` runs the same request on the stand-in, with the job pointed at `job_endpoint_url`)."""
    # Pre-flight, before anything is read from AWS: the flags the job would reject fail here, in milliseconds.
    schema = preflight.check_schema(args.schema, args.partition_by)
    options = dict(args.option)
    outputs = cli.stack_outputs(args)
    consumer = outputs.consumer(args.consumer)
    region = aws.session(args.region).region_name
    checkpoint_default, output_default = default_locations(outputs, args.consumer)
    checkpoint = (args.checkpoint or checkpoint_default).rstrip("/")
    output = (args.output or output_default).rstrip("/")
    preflight.check_emr_locations(args.checkpoint or checkpoint, args.output or output, options, args.sink,
                                  args.table, consumer.checkpoint_uri, consumer.output_uri)
    if args.sink == "iceberg":
        preflight.check_iceberg_database(args.table, args.consumer, consumer.iceberg_glue_database)
    try:
        raw = preflight.job_source_options(args.format, consumer.queue_url, checkpoint, options, region=region,
                                           flag_names={"queueUrl": f"--consumer {args.consumer}, whose queue is"})
    except preflight.OptionError as e:
        raise SubmitError(str(e)) from None
    opts = preflight.check_options(raw, schema)
    for warning in preflight.check_emr_backfill(opts, options, args.consumer, outputs.values.get("SourceBucketName"),
                                                consumer.prefix, consumer.job_role_arn):
        cli.say(warning)
    manifest = _manifest(args, outputs)
    spec = JobSpec(
        # The canonical form: the job's DataStreamReader.schema() refuses `name: type` columns that pass here.
        consumer=args.consumer, format=args.format, schema=schema.ddl if schema else None, output=args.output,
        checkpoint=args.checkpoint, partition_by=args.partition_by, options=tuple("=".join(kv) for kv in args.option),
        until_drained=args.until_drained, region=region, name=args.name,
        trigger_interval=args.trigger_interval, max_failed_attempts_per_hour=args.max_failed_attempts_per_hour,
        timeout_minutes=args.timeout_minutes, spark_conf=tuple(args.conf),
        sink=args.sink, table=args.table, transform=args.transform, target_file_size=args.target_file_size,
        table_writer=args.table_writer, job_endpoint_url=job_endpoint_url,
    )
    locations = consumer_artifact_locations(manifest, outputs, args.consumer)
    request = build_start_job_run_request(outputs, spec, locations, manifest, args.client_token or uuid.uuid4().hex)
    validate_request(request)
    return Submission(outputs, spec, manifest, locations, request)


def _submit(args, out) -> int:
    sub = prepare_submission(args)
    outputs, spec, manifest, locations, request = sub.outputs, sub.spec, sub.manifest, sub.locations, sub.request
    if not args.apply:
        print(json.dumps(request, indent=2), file=out)
        cli.say("dry run: the flags and the request are valid; nothing was uploaded or started. "
                + (f"Run {cli.command('package-job')} to build dist/, then add --apply to submit it."
                   if manifest.get("preview") else "Add --apply to submit it."))
        return 0
    _, emr, s3 = emr_aws.session_clients(spec.region, args.endpoint_url)
    app_id = request["applicationId"]
    declared_arch = outputs.values.get("EmrArchitecture")
    app = emr_aws.check_application(emr, app_id, manifest, declared_arch, region=spec.region)
    cli.say(f"application {app_id} ({app.get('releaseLabel', '?')}, "
            f"{app.get('architecture') or declared_arch or 'X86_64'}, {app.get('state', '?')})")
    checkpoint = runs.checkpoint_of(request)
    busy = emr_aws.runs_on_checkpoint(emr, app_id, checkpoint)
    if busy:
        raise SubmitError(runs.checkpoint_in_use(busy, checkpoint, cli.passthrough(args)))
    cli.say(f"uploading artifacts to s3://{locations.bucket}/")
    emr_aws.upload_artifacts(s3, args.dist, manifest, locations)
    run_id = emr_aws.start_run(emr, request)
    cli.say(f"started {spec.mode} job run {run_id} ({spec.job_name}) for consumer {spec.consumer}")
    print(run_id, file=out, flush=True)
    if not args.wait:
        cli.say(follow_up_hint(run_id, cli.passthrough(args)))
        return 0
    # A STREAMING run is meant to go on: waiting ends once it runs (or ends), not when it stops.
    run = emr_aws.wait_for_run(emr, app_id, run_id, args.poll_seconds, show_dashboard=args.dashboard,
                               until_running=spec.mode == "STREAMING")
    if run["state"] == "RUNNING":
        cli.say("the streaming run is running; it goes on until cancelled.\n"
                + follow_up_hint(run_id, cli.passthrough(args)))
        return 0
    return _report_end(run)


def _manifest(args, outputs) -> dict:
    """dist/manifest.json; for a preview without a build yet, the names package-job will give the artifacts."""
    manifest_path = Path(args.dist) / "manifest.json"
    if not args.apply and not manifest_path.is_file():
        cli.say(f"note: {manifest_path} does not exist yet: the artifact keys below hold a placeholder "
                f"({PREVIEW_DIGEST}) for the digests {cli.command('package-job')} will compute")
        return preview_manifest(outputs.values.get("EmrArchitecture"))
    return load_manifest(args.dist)


def follow_up_hint(run_id: str, flags: list[str]) -> str:
    """How to follow and cancel the run, with the flags that found this stack (so the hint runs as printed)."""
    extra = "".join(" " + shlex.quote(f) for f in flags)
    runs = cli.command("job-runs")
    return (f"follow it with: {runs} show {run_id}{extra}\n"
            f"read its log with: {runs} logs {run_id}{extra} --follow\n"
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
    args = cli.parse_args(submit_parser(), argv)
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
    p = cli.parser(RUNS_PROG, "List, show, cancel and read the logs of the application's job runs.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{list,show,logs,cancel}")
    ls = sub.add_parser("list", parents=[common], allow_abbrev=False, help="recent job runs, newest first")
    ls.add_argument("--state", action="append", default=[], metavar="STATE",
                    type=cli.choice("a job run state", runs.ALL_STATES, fold=str.upper),
                    help=f"only runs in this state (repeatable): {', '.join(runs.ALL_STATES)}")
    cli.add_consumer_arg(ls, help="only this consumer's runs (their s3sqs:consumer tag)")
    cli.add_limit_arg(ls, what="runs", default=20)
    cli.add_json_arg(ls, what="one JSON object per run")
    show = sub.add_parser("show", parents=[common], allow_abbrev=False, help="one run's details")
    show.add_argument("run_id", metavar="RUN_ID")
    add_dashboard_arg(show)
    cli.add_json_arg(show, what="the run as GetJobRun returns it, as one JSON object")
    logs = sub.add_parser("logs", parents=[common], allow_abbrev=False,
                          help="the run's driver log from its CloudWatch Logs group ([job] batch lines included)")
    logs.add_argument("run_id", metavar="RUN_ID")
    logs.add_argument("--stream", default="stdout", type=cli.choice("a driver stream", runs.LOG_STREAMS),
                      metavar="{" + ",".join(runs.LOG_STREAMS) + "}", help="the driver's stdout (default) or stderr")
    logs.add_argument("--follow", action="store_true",
                      help="keep printing new lines until the run ends (Ctrl-C stops following, not the run)")
    cli.add_limit_arg(logs, what="lines, the newest")
    cli.add_json_arg(logs, what="one JSON object per line (timestamp, stream, message)")
    logs.add_argument("--poll-seconds", type=float, default=5.0, help=argparse.SUPPRESS)
    cancel = sub.add_parser("cancel", parents=[common], allow_abbrev=False, help="cancel a run (with --apply)")
    cancel.add_argument("run_id", metavar="RUN_ID")
    cli.add_apply_args(cancel, act="cancel the run")
    cancel.add_argument("--wait", action="store_true",
                        help="with --apply: wait until the run has ended; exit 1 if it failed before it was cancelled")
    cancel.add_argument("--poll-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    return p


def _runs(args, out) -> int:
    outputs = cli.stack_outputs(args)
    if getattr(args, "consumer", None):
        outputs.consumer(args.consumer)  # a name the stack lacks is refused, with the close one, before any call
    app_id = outputs.get("EmrApplicationId")
    region, emr, _ = emr_aws.session_clients(args.region, args.endpoint_url)
    if args.command == "list":
        found = sorted(emr_aws.list_runs(emr, app_id, args.state, region=region),
                       key=lambda r: str(r.get("createdAt") or ""), reverse=True)
        if args.consumer:  # the tag is on the run, not its summary: look runs up until the limit is reached
            mine = (r for r in found
                    if runs.consumer_of(emr_aws.get_run(emr, app_id, r["id"], region)) == args.consumer)
            found = [r for _, r in zip(range(args.limit), mine)]
        found = found[: args.limit]
        if args.json:
            for r in found:
                print(json.dumps(r, default=str), file=out)
            return 0
        lines = runs.runs_table(found) if found else [f"no job runs on application {app_id}"]
        print("\n".join(lines), file=out)
        return 0
    run = emr_aws.get_run(emr, app_id, args.run_id, region, cli.passthrough(args))
    if args.command == "show":
        dashboard = emr_aws.dashboard_url(emr, app_id, args.run_id) if args.dashboard else None
        if args.json:
            print(json.dumps({**run, **({"dashboard": dashboard} if dashboard else {})}, default=str), file=out)
        else:
            print("\n".join(runs.run_details(run, dashboard)), file=out)
        return 0 if run["state"] not in ("FAILED", "CANCELLED") else cli.NOT_DONE
    if args.command == "logs":
        logs = aws.client(aws.session(region), "logs", args.endpoint_url)
        return emr_aws.print_logs(logs, emr, app_id, run, args.stream, follow=args.follow, limit=args.limit,
                                  as_json=args.json, poll_seconds=args.poll_seconds, out=out)
    if not args.apply:
        print(f"would cancel job run {args.run_id} ({run.get('name') or 'unnamed'}, {run['state']})", file=out)
        cli.say("dry run: nothing was cancelled. Add --apply to cancel it.")
        return 0
    emr.cancel_job_run(applicationId=app_id, jobRunId=args.run_id)
    cli.say(f"cancellation requested for {args.run_id}")
    if args.wait:
        run = emr_aws.wait_for_run(emr, app_id, args.run_id, args.poll_seconds)
        return 0 if runs.cancel_succeeded(run["state"]) else cli.NOT_DONE
    return 0


def runs_main(argv: list[str] | None = None, out=None) -> int:
    args = cli.parse_args(runs_parser(), argv)
    return cli.run(RUNS_PROG, lambda: _runs(args, out or sys.stdout), debug=args.debug,
                   interrupted="stopped watching; a cancellation already requested goes ahead")
