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
import sys

from ops import cli
from ops.compaction import CompactionError

PROG = "compact-table"


def parser() -> argparse.ArgumentParser:
    from s3sqs.sinks.config import CATALOGS, DEFAULT_TARGET_FILE_SIZE

    p = argparse.ArgumentParser(prog=PROG, description="Combine a Delta or Iceberg table's small files, safely "
                                                       "while the stream runs.")
    p.add_argument("--format", required=True, choices=("delta", "iceberg"), help="the table's format")
    p.add_argument("--table", required=True,
                   help="delta: the table's location (local path or s3://); iceberg: namespace.table")
    p.add_argument("--target-file-size", default=DEFAULT_TARGET_FILE_SIZE, metavar="SIZE",
                   help=f"size of the rewritten files (default {DEFAULT_TARGET_FILE_SIZE}); files of at least 3/4 "
                        "of it are left alone")
    p.add_argument("--catalog", choices=CATALOGS, help="iceberg: glue (default) or sql")
    p.add_argument("--catalog-uri", metavar="URL", help="iceberg with --catalog sql: the SQLAlchemy URL")
    p.add_argument("--dry-run", action="store_true", help="show what would be combined; change nothing")
    cli.add_aws_args(p)
    cli.add_debug_arg(p)
    return p


def open_table(args: argparse.Namespace):
    """The existing table, with its own partitioning; raises SinkError naming what is wrong."""
    from s3sqs.core.endpoint import Endpoint
    from s3sqs.sinks import SinkError
    from s3sqs.sinks.config import catalog_config, iceberg_table_name

    endpoint = Endpoint(args.endpoint_url, args.region)
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
    from s3sqs.sinks.config import target_file_size

    try:
        target = open_table(args)
        before, after = target.compact(target_file_size(args.target_file_size), dry_run=args.dry_run,
                                       progress=cli.say)
    except SinkError as e:  # report the sinks' checks like every operator error, naming the flag
        message = str(e)
        raise CompactionError(message if message.startswith("--") else f"--table {args.table}: {message}") from None
    print(f"before: {before.describe()}", file=out)
    print(f"after:  {after.describe()}" + ("  (dry run: nothing changed)" if args.dry_run else ""), file=out)
    return 0


def main(argv: list[str] | None = None, out=None) -> int:
    args = parser().parse_args(argv)
    return cli.run(PROG, lambda: _command(args, out or sys.stdout), debug=args.debug,
                   interrupted="the groups already swapped stay compacted, the rest is unchanged")
