"""The source-state command line: `summary`, `files` and `lookup` on a checkpoint's source state, and `clean`
on the stack's source bucket.

The first three only read: the newest state version is copied into a private directory (as the job's own
readers do), so they are safe while the job runs, and never write to the checkpoint. `clean` reads the
consumers' commit markers and, with --apply, archives or deletes what is due (s3sqs.cleaning).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from urllib.parse import urlparse

from s3sqs.core.errors import StateError as IndexStateError
from s3sqs.core.vocabulary import CleanStatus
from s3sqs.job.flags import whole_number
from s3sqs.state.view import STATUSES, StateViewError, open_state

from ops import aws, cli
from ops.state import SourceStateError, clean, show

PROG = "source-state"


_batch_id = whole_number(0, "a batch id (a whole number from 0)", "is not a batch id: batch ids count from 0")


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    where = common.add_argument_group("where the state is (one of --checkpoint, --consumer, --state-location)")
    where.add_argument("--checkpoint", metavar="URI",
                       help="the job's checkpoint (local path or s3://): its source-state and quarantine are read, "
                            "and Spark's commit log says which batches are in the sink")
    where.add_argument("--state-location", metavar="URI",
                       help="the source's stateLocation, when it is not CHECKPOINT/source-state")
    where.add_argument("--quarantine-location", metavar="URI",
                       help="the source's quarantineLocation (default CHECKPOINT/quarantine, or "
                            "STATE-LOCATION/quarantine without --checkpoint)")
    cli.add_consumer_arg(common, help="read the checkpoint of this consumer (its checkpointUri in the outputs file)")
    cli.add_stack_args(common, used_for="with --consumer, for its checkpoint")
    cli.add_aws_args(common)
    common.add_argument("--json", action="store_true",
                        help="JSON output: one object (summary, lookup) or one object per line (files)")
    cli.add_debug_arg(common)

    p = cli.parser(PROG, "Show what a source's state holds: its files, their batches and what became of them. "
                         "Read-only and safe while the job runs; `clean` archives or deletes source files only with "
                         "--apply.")
    sub = p.add_subparsers(dest="command", required=True, metavar="{summary,files,lookup,clean}")
    sub.add_parser("summary", parents=[common], allow_abbrev=False,
                   help="files by status, the last batch, the sink's commit, the source's counters, the state's size")
    f = sub.add_parser("files", parents=[common], allow_abbrev=False,
                       help="one line per file: seq, batch, status, event time, size, commit time, URI")
    which = f.add_mutually_exclusive_group()
    which.add_argument("--batch", type=_batch_id, metavar="N", help="only the files of batch N (Spark's batch id)")
    which.add_argument("--since", metavar="TIME",
                       help="only files whose event is at or after TIME: an ISO time (2026-11-20T08:00:00Z) or a "
                            "duration ago (90m, 12h, 3d); oldest event first")
    f.add_argument("--status", type=cli.choice("a file status", STATUSES, fold=str.lower), metavar="STATUS",
                   help=f"only files in this status: {', '.join(STATUSES)}")
    cli.add_limit_arg(f, what="files")
    lk = sub.add_parser("lookup", parents=[common], allow_abbrev=False,
                        help="was this key seen, in which batch, and what became of it (exit 1 if never seen)")
    lk.add_argument("key", metavar="KEY", help="s3://bucket/key, or the key alone (any bucket)")

    c = sub.add_parser("clean", allow_abbrev=False,
                       help="each committed file's cleaning status and time; with --apply, archive or delete those "
                            "every consumer that reads them has committed, once the retention has passed")
    cli.add_stack_args(c, used_for="always: the consumers, the source bucket and sourceCleaning")
    cli.add_aws_args(c)
    cli.add_apply_args(c, act="archive or delete the files that are due")
    c.add_argument("--status", type=cli.choice("a cleaning status", [s.value for s in CleanStatus], fold=str.lower),
                   metavar="STATUS", help=f"only show files in this status: {', '.join(s.value for s in CleanStatus)}")
    cli.add_limit_arg(c, what="files archived or deleted in this run")
    c.add_argument("--read", type=cli.choice("what to read", ["new", "all"], fold=str.lower), metavar="WHAT",
                   help="new: only the commit markers and journal after the last --apply run's progress (the default "
                        "with --apply); all: every marker and the whole journal, to list every committed file (the "
                        "default without it)")
    c.add_argument("--json", action="store_true", help="one JSON object per file")
    cli.add_debug_arg(c)
    return p


def resolve(args) -> tuple[str | None, str | None, str | None]:
    """(state location, checkpoint, quarantine location) from the flags, checked."""
    if args.consumer and args.checkpoint:
        raise SourceStateError("--consumer and --checkpoint both name a checkpoint: give one of them")
    if (args.outputs_file or args.stack) and not args.consumer:
        raise SourceStateError("the outputs file is read for --consumer NAME's checkpoint: pass --consumer NAME too")
    checkpoint = args.checkpoint
    if args.consumer:
        c = cli.stack_outputs(args, needed_for=f"--consumer {args.consumer}'s checkpoint").consumer(args.consumer)
        if not c.checkpoint_uri:
            raise SourceStateError(f"the outputs file has no checkpointUri for consumer {args.consumer!r}; "
                             "pass --checkpoint URI")
        checkpoint = c.checkpoint_uri
    if not checkpoint and not args.state_location:
        raise SourceStateError("say where the state is: --checkpoint URI (the job's checkpoint), --consumer NAME, or "
                         "--state-location URI")
    for flag, value in (("--checkpoint", checkpoint), ("--state-location", args.state_location),
                        ("--quarantine-location", args.quarantine_location)):
        if value:
            _check_location(flag, value)
    return args.state_location, checkpoint, args.quarantine_location


def _check_location(flag: str, value: str) -> None:
    u = urlparse(value)
    if value.startswith("s3://") and not u.netloc:
        raise SourceStateError(f"{flag} {value!r} has no bucket: give s3://bucket/prefix")
    if "://" in value and u.scheme not in ("s3", "file"):
        raise SourceStateError(f"{flag} {value!r} must be a local path or an s3:// URI")


def _s3_factory(args):
    client = None

    def get():
        nonlocal client
        if client is None:
            client = aws.client(aws.session(args.region), "s3", args.endpoint_url)
        return client
    return get


def _clean(args, out) -> int:
    """Judge every committed file, and with --apply clean those that are due; one row per file, then a line."""
    from s3sqs.cleaning.cleaner import Cleaner, ConsumerMarkers, summary
    from s3sqs.state.store import open_store

    outputs = cli.stack_outputs(args, needed_for="the stack's consumers and its sourceCleaning")
    settings, published = clean.settings_of(outputs)
    s3 = _s3_factory(args)
    consumers = [ConsumerMarkers(c, open_store(where, s3)) for c, where in clean.consumers_of(
        outputs, published["eventFilter"])]
    cleaner = Cleaner(s3(), settings, outputs.get("SourceBucketName"), consumers, open_store(published["journalUri"], s3),
                      progress=cli.say)
    if not args.json:
        print(clean.CLEAN_HEADER, file=out)

    def show_row(row) -> None:
        if args.status is None or row.status == args.status:
            print(clean.row_json(row) if args.json else clean.row_line(row), file=out, flush=True)

    counts = cleaner.run(args.apply, on_row=show_row, limit=args.limit,
                         resume=None if args.read is None else args.read == "new")
    total = sum(counts.values())
    what = f"{settings.mode} after {settings.retention_text}" + (f" to {settings.archive_uri}" if settings.archive_uri
                                                                  else "")
    cli.say(f"source-state clean ({what}): {total:,} committed files: {summary(counts)}" +
            ("" if args.apply else f"; a dry run: re-run with --apply to clean the {counts[CleanStatus.DUE]:,} due"))
    return cli.NOT_DONE if counts[CleanStatus.FAILED] else 0


def _command(args, out) -> int:
    if args.command == "clean":
        return _clean(args, out)
    state, checkpoint, quarantine = resolve(args)
    since = show.parse_since(args.since, datetime.now(timezone.utc)) if getattr(args, "since", None) else None
    try:
        with open_state(state, checkpoint=checkpoint, quarantine_location=quarantine,
                        s3_client_factory=_s3_factory(args), progress=cli.say) as view:
            where = state or f"{checkpoint.rstrip('/')}/source-state"
            if args.command == "summary":
                s = view.summary()
                text = json.dumps(show.summary_json(where, s)) if args.json else \
                    "\n".join(show.summary_lines(where, s, datetime.now(timezone.utc)))
                print(text, file=out)
                return 0
            if args.command == "lookup":
                found = view.lookup(args.key)
                if args.json:
                    print(json.dumps({"key": args.key, "found": bool(found),
                                      "files": [show.file_json(f) for f in found]}), file=out)
                else:
                    print("\n".join(show.lookup_lines(args.key, found)), file=out)
                return 0 if found else cli.NOT_DONE
            return _files(view, args, since, out)
    except (StateViewError, IndexStateError) as e:  # the state, or the checkpoint, is not what it should be
        raise SourceStateError(str(e)) from e


def _files(view, args, since: int | None, out) -> int:
    """Rows as they are read, so the first ones show at once and a pipe into `head` stops the read."""
    n = 0
    if not args.json:
        print(show.FILES_HEADER, file=out)
    for f in view.files(batch=args.batch, since_ms=since, status=args.status):
        print(json.dumps(show.file_json(f)) if args.json else show.file_line(f), file=out)
        n += 1
        if args.limit is not None and n >= args.limit:
            break
    cli.say(show.count(n, "file") + (f" (--limit {args.limit})" if args.limit is not None and n >= args.limit else ""))
    return 0


def main(argv: list[str] | None = None, out=None) -> int:
    args = cli.parse_args(parser(), argv)
    try:
        interrupted = ("a file is either still in the source or cleaned; run it again to finish"
                       if args.command == "clean" else "nothing was changed; the private copy of the state is removed")
        return cli.run(PROG, lambda: _command(args, out or sys.stdout), debug=args.debug, interrupted=interrupted)
    except BrokenPipeError:  # `source-state files | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
