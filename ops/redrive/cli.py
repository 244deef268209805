"""The redrive-dlq command line: `inspect`, `redrive` and `export` on one dead-letter queue."""
from __future__ import annotations

import argparse
import json
import signal
from datetime import datetime, timezone
from urllib.parse import urlparse

from ops import aws, cli
from ops.redrive import RedriveError, dlq
from ops.redrive import aws as sqs_side

PROG = "redrive-dlq"
MAX_VISIBILITY = 43200  # SQS's limit: 12 hours


def _visibility(text: str) -> int:
    v = cli.positive_int(text)
    if v > MAX_VISIBILITY:
        raise argparse.ArgumentTypeError(f"at most {MAX_VISIBILITY} seconds (12 hours)")
    return v


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--dlq-url", metavar="URL", help="the dead-letter queue")
    cli.add_stack_args(common, used_for="with --consumer, for its DLQ and queue")
    cli.add_consumer_arg(common, help="consumer whose DLQ (and queue) to use, from the outputs file")
    cli.add_aws_args(common)
    cli.add_debug_arg(common)

    p = cli.parser(PROG, "Inspect a dead-letter queue and send its messages back (with --apply).")
    sub = p.add_subparsers(dest="command", required=True, metavar="{inspect,redrive,export}")

    i = sub.add_parser("inspect", parents=[common], allow_abbrev=False,
                       help="count, oldest age and a decoded sample; changes nothing")
    cli.add_limit_arg(i, what="messages to peek at", default=100)
    i.add_argument("--depth", type=int, default=2, metavar="N", help="key path segments to group by (default 2)")
    i.add_argument("--show", type=int, default=3, metavar="N", help="keys shown per group (default 3)")
    i.add_argument("--visibility-timeout", type=_visibility, default=60, metavar="S",
                   help="how long peeked messages stay hidden if the tool is killed (default 60)")
    cli.add_json_arg(i)
    cli.retire(i, "--sample", "use --limit N, the one name for a count")

    r = sub.add_parser("redrive", parents=[common], allow_abbrev=False,
                       help="move messages back to the source queue (with --apply)")
    r.add_argument("--to-queue-url", metavar="URL", help="target queue (default: the DLQ's only source queue)")
    r.add_argument("--key-glob", metavar="GLOB",
                   help="move only messages announcing a key that matches (fnmatch; * crosses /)")
    cli.add_limit_arg(r, what="messages moved")
    r.add_argument("--rate", type=cli.positive_float, metavar="MSG_PER_S", help="at most this many messages per second")
    cli.add_apply_args(r, act="move the messages")
    r.add_argument("--no-move-task", action="store_true",
                   help="never use StartMessageMoveTask; always send-then-delete")
    r.add_argument("--visibility-timeout", type=_visibility, default=30, metavar="S",
                   help="how long received messages stay hidden if the tool is killed (default 30)")
    cli.retire(r, "--to", "the target queue is --to-queue-url URL")
    cli.retire(r, "--max", "use --limit N, the one name for a count")

    e = sub.add_parser("export", parents=[common], allow_abbrev=False,
                       help="write an audit copy as JSON lines; leaves messages in place")
    e.add_argument("--to-file", metavar="FILE.jsonl", required=True, help="file to write (refuses to overwrite)")
    e.add_argument("--overwrite", action="store_true", help="replace an existing --to-file")
    cli.add_limit_arg(e, what="messages exported")
    e.add_argument("--visibility-timeout", type=_visibility, default=300, metavar="S",
                   help="how long exported messages stay hidden if the tool is killed (default 300)")
    cli.retire(e, "--to", "the file is --to-file FILE.jsonl")
    return p


def _resolve_dlq(args) -> tuple[str, str | None]:
    """The DLQ URL, and the consumer's own queue when the outputs file names one."""
    if (args.outputs_file or args.stack) and not args.consumer:
        raise RedriveError("the outputs file is read for --consumer NAME's DLQ: pass --consumer NAME too")
    preferred = None
    outputs = cli.stack_outputs(args, needed_for=f"--consumer {args.consumer}'s DLQ" if args.consumer else None)
    if outputs is not None:
        c = outputs.consumer(args.consumer)
        preferred = c.queue_url
        if not args.dlq_url:
            args.dlq_url = c.dlq_url
    if not args.dlq_url:
        raise RedriveError("pass --dlq-url URL, or --consumer NAME (its DLQ comes from the outputs file)")
    u = urlparse(args.dlq_url)
    if u.scheme not in ("http", "https") or len([p for p in u.path.split("/") if p]) != 2:
        raise RedriveError(f"--dlq-url {args.dlq_url!r} is not an SQS queue URL "
                           "(https://sqs.<region>.amazonaws.com/<account>/<name>)")
    return args.dlq_url, preferred


def _command(args) -> int:
    dlq_url, preferred = _resolve_dlq(args)
    sqs = aws.client(aws.session(args.region), "sqs", args.endpoint_url)
    if args.command == "inspect":
        ins = sqs_side.inspect(sqs, dlq_url, args.limit, args.visibility_timeout, log=cli.say)
        if args.json:
            print(json.dumps(dlq.inspection_json(dlq_url, ins)))
        else:
            print(dlq.format_inspection(dlq_url, ins, args.depth, args.show, datetime.now(timezone.utc)))
        return 0
    if args.command == "export":
        n = sqs_side.export(sqs, dlq_url, args.to_file, args.visibility_timeout, args.limit, args.overwrite,
                            log=cli.say)
        print(f"exported {n} messages to {args.to_file}; they are all still in the DLQ")
        return 0
    target = sqs_side.resolve_target(sqs, dlq_url, args.to_queue_url, preferred)
    result = sqs_side.redrive(
        sqs, dlq_url, target, key_glob=args.key_glob, max_messages=args.limit, rate=args.rate,
        dry_run=not args.apply, visibility=args.visibility_timeout, use_move_task=not args.no_move_task, log=cli.say,
    )
    for note in result.notes:
        print(note)
    if result.method != "dry run":
        print(f"{result.method}: moved {result.moved} messages to {result.target}")
    if result.skipped:
        verb = "would stay" if result.method == "dry run" else "stay"
        print(f"{result.skipped} messages {verb} in the DLQ (not matching --key-glob, or beyond --limit)")
    if result.send_failed or result.delete_failed:
        cli.say(f"not finished: {result.send_failed} could not be sent and stay in the DLQ; {result.delete_failed} "
                "were sent but not deleted and will be sent again by the next run. Re-run to finish.")
        return cli.NOT_DONE
    if result.method == "dry run":
        cli.say("dry run: nothing was moved. Add --apply to move the messages.")
    return 0


def _on_signal(signum, frame) -> None:
    """The first Ctrl-C (or SIGTERM) asks the work to stop at the next batch boundary; a second stops it now."""
    if sqs_side.stop_requested():
        raise KeyboardInterrupt
    sqs_side.request_stop()
    cli.say("stopping after the current batch (press Ctrl-C again to stop at once)")


def main(argv: list[str] | None = None) -> int:
    args = cli.parse_args(parser(), argv)
    sqs_side.reset_stop()
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)  # `kill` gets the same orderly stop as Ctrl-C
    return cli.run(
        PROG, lambda: _command(args), debug=args.debug,
        interrupted="no message was lost. Messages already sent but not yet deleted may be sent again by the "
                    "next run (harmless). Re-run to continue.",
    )
