"""The compact-table command line.

Each micro-batch adds at least one file per partition value it touches, so a table fed every few
seconds collects many small files. This rewrites them into files of about --target-file-size:
- Delta: delta-rs's optimize (compact), one partition at a time, each its own commit. Optimize conflicts
  only with operations that remove files, so the stream's appends carry on.
- Iceberg: each group of small files of a partition is read, written as one file, and swapped in by one
  transaction that deletes the old files and adds the new one. When the stream commits in between, the
  swap is retried on the new table state as long as all the old files are still live.
Old files stay on storage (readers of older versions may still use them) until the table's own
clean-up removes them: Delta's VACUUM, Iceberg's snapshot expiry.
"""
from __future__ import annotations

import argparse
import os
import sys

from ops import cli
from ops.compaction import CompactionError

PROG = "compact-table"


def parser() -> argparse.ArgumentParser:
    from s3sqs.sinks.kinds.base import DEFAULT_TARGET_FILE_SIZE
    from s3sqs.sinks.kinds.iceberg import CATALOGS

    p = cli.parser(PROG, "Combine a Delta or Iceberg table's small files, safely while the stream runs.")
    p.add_argument("--format", required=True, type=cli.choice("a table format", ("delta", "iceberg"), fold=str.lower),
                   metavar="{delta,iceberg}", help="the table's format")
    p.add_argument("--table",
                   help="delta: the table's location (local path or s3://; default with --consumer: its outputUri); "
                        "iceberg: namespace.table (with --consumer, the namespace is its icebergGlueDatabase)")
    cli.add_consumer_arg(p, help="the consumer whose table it is: its outputUri is the Delta table's default "
                                 "location, and an Iceberg table must be in its icebergGlueDatabase")
    p.add_argument("--target-file-size", default=DEFAULT_TARGET_FILE_SIZE, metavar="SIZE",
                   help=f"size of the rewritten files (default {DEFAULT_TARGET_FILE_SIZE}); files of at least 3/4 "
                        "of it are left alone")
    p.add_argument("--catalog", type=cli.choice("a catalog", CATALOGS, fold=str.lower),
                   metavar="{" + ",".join(CATALOGS) + "}", help="iceberg: glue (default) or sql")
    p.add_argument("--catalog-uri", metavar="URL", help="iceberg with --catalog sql: the SQLAlchemy URL")
    cli.add_apply_args(p, act="rewrite the small files")
    cli.add_stack_args(p, used_for="with --consumer")
    cli.add_aws_args(p)
    cli.add_debug_arg(p)
    return p


def resolve_table(args: argparse.Namespace) -> None:
    """--table from the consumer's outputs where it is left out, and checked against them where it is given."""
    if (args.outputs_file or args.stack) and not args.consumer:
        raise CompactionError("the outputs file is read for --consumer NAME's table: pass --consumer NAME too")
    if not args.consumer:
        if not args.table:
            raise CompactionError("--table is required without --consumer")
        return
    from ops.emr.preflight import check_iceberg_database
    from ops.emr.request import default_locations

    outputs = cli.stack_outputs(args, needed_for=f"--consumer {args.consumer}'s table")
    consumer = outputs.consumer(args.consumer)
    if args.format == "delta":
        args.table = args.table or default_locations(outputs, args.consumer)[1]
        return
    if not args.table:
        raise CompactionError("--format iceberg needs --table namespace.table")
    try:
        check_iceberg_database(args.table, args.consumer, consumer.iceberg_glue_database)
    except Exception as e:  # a SubmitError names --sink; say it as this tool's error
        raise CompactionError(str(e).replace("--sink iceberg: ", "")) from None


def open_table(args: argparse.Namespace):
    """The existing table, with its own partitioning; raises SinkError naming what is wrong."""
    from s3sqs.core.endpoint import Endpoint
    from s3sqs.sinks import SinkError
    from s3sqs.sinks.kinds.iceberg import catalog_config, iceberg_table_name

    # delta-rs and pyiceberg do not read AWS_ENDPOINT_URL as boto3 does (the local stack's env sets it).
    endpoint = Endpoint(args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL"), args.region)
    if args.format == "delta":
        from s3sqs.sinks.delta import DeltaTarget
        from s3sqs.sinks.location import Location

        for flag, value in (("--catalog", args.catalog), ("--catalog-uri", args.catalog_uri)):
            if value:
                raise SinkError(f"{flag} applies to --format iceberg only")
        return DeltaTarget.existing(Location.parse(args.table, "--table", endpoint))
    from s3sqs.sinks.iceberg import IcebergTarget, open_catalog

    name = iceberg_table_name(args.table, args.catalog)
    catalog = catalog_config(args.catalog, args.catalog_uri, None, None, endpoint, creates_tables=False)
    return IcebergTarget(open_catalog(catalog, endpoint), name, endpoint=endpoint)


def _command(args: argparse.Namespace, out) -> int:
    from s3sqs.sinks import SinkError
    from s3sqs.sinks.kinds.base import target_file_size

    resolve_table(args)
    preview = not args.apply
    try:
        target = open_table(args)
        before, after = target.compact(target_file_size(args.target_file_size), dry_run=preview,
                                       progress=cli.say)
    except SinkError as e:  # report the sinks' checks like every operator error, naming the flag
        message = str(e)
        raise CompactionError(message if message.startswith("--") else f"--table {args.table}: {message}") from None
    except OSError as e:  # delta-rs reports storage problems (no table, no access) as OSError
        raise CompactionError(f"--table {args.table}: {str(e).splitlines()[0]}") from None
    print(f"before: {before.describe()}", file=out)
    print(f"after:  {after.describe()}" + ("  (dry run: nothing changed)" if preview else ""), file=out)
    if preview:
        cli.say("dry run: nothing was rewritten. Add --apply to compact the table.")
    return 0


def main(argv: list[str] | None = None, out=None) -> int:
    args = cli.parse_args(parser(), argv)
    return cli.run(PROG, lambda: _command(args, out or sys.stdout), debug=args.debug,
                   interrupted="the groups already swapped stay compacted, the rest is unchanged")
