"""The local-stack command line: `start` and `stop` (what `make local-stack` and `make local-stack-stop` run), and
`run-job`, `logs` and `cancel`, which run the packaged job on it as EMR would run it."""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from urllib.parse import urlparse

from ops import cli
from ops.emr import runs
from ops.emr.cli import add_run_flags, prepare_submission
from ops.emr.request import DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR
from ops.local_stack import LocalStackError, job_runs, stack

PROG = "local-stack"
COMMANDS = "{start,stop,run-job,logs,cancel}"


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--state-dir", type=Path, default=stack.DEFAULT_STATE_DIR, metavar="DIR",
                        help=f"where the server's PID, log, env file and job runs live (default {stack.DEFAULT_STATE_DIR})")
    cli.add_debug_arg(common)
    p = cli.parser(PROG, "A local moto server with the stack's wiring and its cdk-outputs.json, to try every "
                         "operator script on, and to run the packaged job on as EMR would.")
    sub = p.add_subparsers(dest="command", required=True, metavar=COMMANDS)
    start = sub.add_parser("start", parents=[common], allow_abbrev=False,
                           help="start the server, build the stack's wiring on it, write the outputs file")
    start.add_argument("--port", type=cli.positive_int, default=stack.DEFAULT_PORT, metavar="N",
                       help=f"port on 127.0.0.1 (default {stack.DEFAULT_PORT})")
    start.add_argument("--outputs-file", type=Path, default=Path(cli.DEFAULT_OUTPUTS_FILE), metavar="FILE",
                       help=f"where to write the stack outputs (default {cli.DEFAULT_OUTPUTS_FILE}); an existing "
                            "file that is not a local stack's is never overwritten")
    start.add_argument("--cdk-json", type=Path, metavar="FILE",
                       help="the cdk.json whose context the stack is built from (default: the checkout's)")
    start.add_argument("--context", action="append", default=[], type=_context_pair, metavar="KEY=JSON",
                       help="replace one top-level context key for this stack, e.g. --context 'kms={\"mode\": "
                            "\"customer\"}' (repeatable)")
    sub.add_parser("stop", parents=[common], allow_abbrev=False,
                   help="cancel its job runs, stop the server by its recorded PID and remove the outputs file it wrote")
    run = sub.add_parser("run-job", parents=[common], allow_abbrev=False,
                         help="run dist/'s job on this machine as EMR would run submit-job's request: the "
                              "consumer's queue, s3:// checkpoint and output on the stand-in")
    add_run_flags(run)
    run.set_defaults(apply=True, client_token=None, max_failed_attempts_per_hour=DEFAULT_MAX_FAILED_ATTEMPTS_PER_HOUR,
                     timeout_minutes=None)
    logs = sub.add_parser("logs", parents=[common], allow_abbrev=False,
                          help="a run's driver log ([job] batch lines on stdout, Spark's log on stderr)")
    logs.add_argument("run_id", metavar="RUN_ID")
    logs.add_argument("--stream", default="stdout", type=cli.choice("a driver stream", ("stdout", "stderr")),
                      metavar="{stdout,stderr}", help="the driver's stdout (default) or stderr")
    logs.add_argument("--follow", action="store_true", help="keep printing new lines until the run ends or Ctrl-C")
    cancel = sub.add_parser("cancel", parents=[common], allow_abbrev=False, help="end a run (the driver and its workers)")
    cancel.add_argument("run_id", metavar="RUN_ID")
    return p


def _context_pair(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} must look like KEY=JSON, e.g. 'kms={{\"mode\": \"customer\"}}'")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"{key.strip()}: the value is not JSON ({e.msg} at character {e.pos}); "
                                         "quote it for the shell, e.g. 'kms={\"mode\": \"customer\"}'") from None


def _state_flags(args) -> list[str]:
    """--state-dir as given, when not the default, so a printed command runs as printed."""
    return [] if args.state_dir == stack.DEFAULT_STATE_DIR else ["--state-dir", str(args.state_dir)]


def _started(args) -> int:
    outputs = stack.start(args.port, args.outputs_file, args.state_dir, log=cli.say, cdk_json=args.cdk_json,
                          context=dict(args.context) or None)
    endpoint = f"http://127.0.0.1:{args.port}"
    consumers = sorted(json.loads(outputs["Consumers"]))
    state = _state_flags(args)
    found = [] if args.outputs_file == Path(cli.DEFAULT_OUTPUTS_FILE) else ["--outputs-file", str(args.outputs_file)]
    print("\n".join([
        f"local stack on {endpoint}: consumers {', '.join(consumers)}; outputs in {args.outputs_file}",
        f"use it from this shell (fake credentials and its endpoint; clears AWS_PROFILE and the like, so open "
        f"another shell for AWS):  source {shlex.quote(str(args.state_dir / 'env'))}",
        f"  {cli.command_line('job-runs', 'list', *found)}",
        f"  {cli.command_line('redrive-dlq', 'inspect', '--consumer', consumers[0], *found)}",
        f"run the packaged job on it:  {cli.command_line('local-stack', 'run-job', '--consumer', consumers[0], '--format', 'csv', *found, *state)}",
        *([f"clean the source: run the job with run-job (its commit markers go to the consumer's checkpoint, "
           f"where the cleaner reads them), then  {cli.command_line('source-state', 'clean', *found)}  (add --apply "
           "to archive or delete)"] if "SourceCleaning" in outputs else []),
        "stop it with:  " + ("make local-stack-stop  (or " if not state else "")
        + cli.command_line("local-stack", "stop", *state) + (")" if not state else ""),
    ]))
    return 0


def _run_job(args, out) -> int:
    outputs = cli.stack_outputs(args)
    if not stack.is_local_outputs({outputs.stack_name: outputs.values}):
        raise LocalStackError(f"{args.outputs_file or cli.DEFAULT_OUTPUTS_FILE} is not a local stack's (its queues "
                              "are not on 127.0.0.1): run-job runs on the stand-in only; on AWS, use submit-job")
    if args.table_writer == "spark":
        raise LocalStackError("--table-writer spark: EMR's own Delta and Iceberg jars are not on this machine; "
                              "leave the flag out (the connector's writer)")
    queue = next(iter(json.loads(outputs.values["Consumers"]).values()))["queueUrl"]
    endpoint = f"{urlparse(queue).scheme}://{urlparse(queue).netloc}"
    args.region = args.region or stack.REGION
    sub = prepare_submission(args, job_endpoint_url=endpoint)
    job_runs.check_machine(sub.manifest)
    checkpoint = runs.checkpoint_of(sub.request)  # as submit-job reads it
    busy = job_runs.live_on_checkpoint(args.state_dir, checkpoint)
    if busy:
        raise LocalStackError(f"run {busy[0]} is still running on {checkpoint}; cancel it first: "
                              + cli.command_line("local-stack", "cancel", busy[0], *_state_flags(args)))
    run_id = job_runs.new_run_id(args.consumer)
    local = {sub.locations.uri(name): str(Path(args.dist).resolve() / name) for name in sub.manifest["artifacts"]}
    cli.say(f"unpacking {args.dist}/ for the driver, then starting {sub.spec.mode} run {run_id} on EMR's Spark "
            f"{job_runs.EMR_SPARK}")
    paths = job_runs.start(args.state_dir, run_id, sub.request, Path(args.dist), sub.manifest, local, endpoint,
                           args.region, checkpoint)
    print(run_id, file=out, flush=True)
    ended = job_runs.wait(paths, until_running=sub.spec.mode == "STREAMING", say=cli.say)
    state = _state_flags(args)
    if ended == job_runs.RUNNING:
        cli.say("the streaming run is running; it goes on until cancelled.\n"
                f"read its log with: {cli.command_line('local-stack', 'logs', run_id, *state, '--follow')}\n"
                f"cancel it with: {cli.command_line('local-stack', 'cancel', run_id, *state)}")
        return 0
    if ended == job_runs.SUCCESS:
        cli.say(f"run {run_id} ended SUCCESS")
        return 0
    cli.say(f"run {run_id} ended {ended}:\n{job_runs.why_failed(paths)}\n"
            f"its whole log: {cli.command_line('local-stack', 'logs', run_id, *state, '--stream', 'stderr')}")
    return cli.NOT_DONE


def _logs(args, out) -> int:
    paths = job_runs.find(args.state_dir, args.run_id)
    for line in job_runs.follow(paths, args.stream, args.follow):
        print(line, file=out, flush=True)
    return 0


def _cancel(args) -> int:
    paths = job_runs.find(args.state_dir, args.run_id)
    if job_runs.cancel(paths):
        cli.say(f"cancelled run {args.run_id}")
    else:
        cli.say(f"run {args.run_id} had already ended {job_runs.state(paths)}")
    return 0


def _stop(args) -> int:
    for folder in job_runs.runs(args.state_dir):
        if job_runs.cancel(job_runs.RunPaths(args.state_dir, folder.name)):
            cli.say(f"cancelled run {folder.name}")
    stack.stop(args.state_dir, log=cli.say)
    return 0


def _command(args, out) -> int:
    if args.command == "start":
        return _started(args)
    if args.command == "stop":
        return _stop(args)
    if args.command == "run-job":
        return _run_job(args, out)
    if args.command == "logs":
        return _logs(args, out)
    return _cancel(args)


def main(argv: list[str] | None = None, out=None) -> int:
    args = cli.parse_args(parser(), argv)
    stack.use_stand_in_credentials()
    return cli.run(PROG, lambda: _command(args, out or sys.stdout), debug=args.debug,
                   interrupted="a job run goes on until `local-stack cancel RUN_ID`; `make local-stack-stop` ends "
                               "the stack and its runs")
