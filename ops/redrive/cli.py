"""The redrive-dlq command line: `inspect`, `redrive` and `export` on one dead-letter queue."""
from __future__ import annotations

import argparse
import signal
from datetime import datetime, timezone
from urllib.parse import urlparse

from ops import aws, cli
from ops.redrive import RedriveError, dlq
from ops.redrive import aws as sqs_side
from ops.stack_outputs import OutputsError

PROG = "redrive-dlq"
MAX_VISIBILITY = 43200  # SQS's limit: 12 hours


def _visibility(text: str) -> int:
    v = cli.positive_int(text)
    if v > MAX_VISIBILITY:
        raise argparse.ArgumentTypeError(f"at most {MAX_VISIBILITY} seconds (12 hours)")
    return v


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dlq-url", metavar="URL", help="the dead-letter queue")
    cli.add_stack_args(common, outputs_default=None,
                       outputs_help="`cdk deploy --outputs-file` JSON; with --consumer, gives --dlq-url")
    cli.add_consumer_arg(common, help="consumer whose DLQ (and queue) to use from --outputs-file")
    cli.add_aws_args(common)

    p = argparse.ArgumentParser(prog=PROG, description="Inspect a dead-letter queue and send its messages back.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{inspect,redrive,export}")

    i = sub.add_parser("inspect", parents=[common], help="count, oldest age and a decoded sample; changes nothing")
    i.add_argument("--sample", type=cli.positive_int, default=100, metavar="N", help="messages to peek at (default 100)")
    i.add_argument("--depth", type=int, default=2, metavar="N", help="key path segments to group by (default 2)")
    i.add_argument("--show", type=int, default=3, metavar="N", help="keys shown per group (default 3)")
    i.add_argument("--visibility-timeout", type=_visibility, default=60, metavar="S",
                   help="how long peeked messages stay hidden if the tool is killed (default 60)")

    r = sub.add_parser("redrive", parents=[common], help="move messages back to the source queue")
    r.add_argument("--to", metavar="URL", help="target queue (default: the DLQ's only source queue)")
    r.add_argument("--key-glob", metavar="GLOB",
                   help="move only messages announcing a key that matches (fnmatch; * crosses /)")
    r.add_argument("--max", type=cli.positive_int, metavar="N", help="move at most N messages")
    r.add_argument("--rate", type=cli.positive_float, metavar="MSG_PER_S", help="at most this many messages per second")
    r.add_argument("--dry-run", action="store_true", help="report what would move; change nothing")
    r.add_argument("--no-move-task", action="store_true",
                   help="never use StartMessageMoveTask; always send-then-delete")
    r.add_argument("--visibility-timeout", type=_visibility, default=30, metavar="S",
                   help="how long received messages stay hidden if the tool is killed (default 30)")

    e = sub.add_parser("export", parents=[common], help="write an audit copy as JSON lines; leaves messages in place")
    e.add_argument("--to", metavar="FILE.jsonl", required=True, help="file to write (refuses to overwrite)")
    e.add_argument("--overwrite", action="store_true", help="replace an existing --to file")
    e.add_argument("--limit", type=cli.positive_int, metavar="N", help="export at most N messages (default: all)")
    e.add_argument("--visibility-timeout", type=_visibility, default=300, metavar="S",
                   help="how long exported messages stay hidden if the tool is killed (default 300)")
    return p


def _resolve_dlq(args) -> tuple[str, str | None]:
    """The DLQ URL, and the consumer's own queue when the outputs file names one."""
    if args.outputs_file and not args.consumer:
        raise RedriveError("--outputs-file needs --consumer NAME to find the DLQ")
    if args.consumer and not args.outputs_file:
        raise RedriveError("--consumer needs --outputs-file")
    preferred = None
    outputs = cli.stack_outputs(args)
    if outputs is not None:
        try:
            c = outputs.consumer(args.consumer)
        except OutputsError as e:
            raise RedriveError(f"--outputs-file: {e}") from None
        preferred = c.queue_url
        if not args.dlq_url:
            args.dlq_url = c.dlq_url
    if not args.dlq_url:
        raise RedriveError("pass --dlq-url URL, or --outputs-file FILE --consumer NAME")
    u = urlparse(args.dlq_url)
    if u.scheme not in ("http", "https") or len([p for p in u.path.split("/") if p]) != 2:
        raise RedriveError(f"--dlq-url {args.dlq_url!r} is not an SQS queue URL "
                           "(https://sqs.<region>.amazonaws.com/<account>/<name>)")
    return args.dlq_url, preferred


def _command(args) -> int:
    dlq_url, preferred = _resolve_dlq(args)
    sqs = aws.client(aws.session(args.region), "sqs", args.endpoint_url)
    if args.command == "inspect":
        ins = sqs_side.inspect(sqs, dlq_url, args.sample, args.visibility_timeout, log=cli.say)
        print(dlq.format_inspection(dlq_url, ins, args.depth, args.show, datetime.now(timezone.utc)))
        return 0
    if args.command == "export":
        n = sqs_side.export(sqs, dlq_url, args.to, args.visibility_timeout, args.limit, args.overwrite, log=cli.say)
        print(f"exported {n} messages to {args.to}; they are all still in the DLQ")
        return 0
    if args.to and args.to.endswith(".jsonl"):
        raise RedriveError(f"--to {args.to} looks like a file; redrive sends to a queue URL (export writes files)")
    target = sqs_side.resolve_target(sqs, dlq_url, args.to, preferred)
    result = sqs_side.redrive(
        sqs, dlq_url, target, key_glob=args.key_glob, max_messages=args.max, rate=args.rate,
        dry_run=args.dry_run, visibility=args.visibility_timeout, use_move_task=not args.no_move_task, log=cli.say,
    )
    for note in result.notes:
        print(note)
    if result.method != "dry run":
        print(f"{result.method}: moved {result.moved} messages to {result.target}")
    if result.skipped:
        verb = "would stay" if result.method == "dry run" else "stay"
        print(f"{result.skipped} messages {verb} in the DLQ (not matching --key-glob, or beyond --max)")
    if result.send_failed or result.delete_failed:
        cli.say(f"not finished: {result.send_failed} could not be sent and stay in the DLQ; {result.delete_failed} "
                "were sent but not deleted and will be sent again by the next run. Re-run to finish.")
        return 1
    return 0


def _on_signal(signum, frame) -> None:
    """The first Ctrl-C (or SIGTERM) asks the work to stop at the next batch boundary; a second stops it now."""
    if sqs_side.stop_requested():
        raise KeyboardInterrupt
    sqs_side.request_stop()
    cli.say("stopping after the current batch (press Ctrl-C again to stop at once)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sqs_side.reset_stop()
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)  # `kill` gets the same orderly stop as Ctrl-C
    return cli.run(
        PROG, lambda: _command(args), error_exit=1,
        interrupted="no message was lost. Messages already sent but not yet deleted may be sent again by the "
                    "next run (harmless). Re-run to continue.",
    )
