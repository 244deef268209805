"""The streaming job: s3-sqs source -> optional transform -> Parquet files, or a Delta or Iceberg table.
The same file is the EMR Serverless entry point.

Local use:  .venv/bin/spark-submit app/job.py --queue-url URL --format csv --schema "id LONG, name STRING" \
                --checkpoint /tmp/ck --output /tmp/out --until-drained

Exit codes: 0 done (or stopped), 1 the query failed, 2 a flag or option is wrong (found before Spark starts).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

log = logging.getLogger("s3sqs.job")

# Run from a checkout without installing: app/ holds the s3sqs package.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EXIT_FAILED, EXIT_USAGE = 1, 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    from s3sqs import sinks

    p = argparse.ArgumentParser(prog="job.py", description="Stream S3 files announced on SQS into Parquet files "
                                                           "or a Delta or Iceberg table.")
    p.add_argument("--queue-url", required=True, help="the consumer's SQS queue URL")
    p.add_argument("--format", required=True, choices=["csv", "json", "parquet"], help="format of the S3 files")
    p.add_argument("--schema", required=True, help='schema as a DDL string, e.g. "id LONG, name STRING"')
    p.add_argument("--checkpoint", required=True, help="checkpoint location (local path or s3://)")
    p.add_argument("--output", help="output location: the Parquet files (--sink parquet), else the default table "
                                    "location (delta) or warehouse (iceberg)")
    p.add_argument("--partition-by", default="", help="comma-separated output partition columns")
    p.add_argument("--state-location", help="source state location (default: CHECKPOINT/source-state)")
    p.add_argument("--endpoint-url", help="S3/SQS-compatible endpoint, e.g. the local stand-in")
    p.add_argument("--region", help="AWS region of the queue (default: from the URL or the environment)")
    p.add_argument("--trigger-interval", default="5 seconds", help="micro-batch interval (default: 5 seconds)")
    p.add_argument("--until-drained", action="store_true",
                   help="stop once the queue is empty and every planned batch is committed")
    p.add_argument("--idle-checks", type=int, default=3,
                   help="with --until-drained: consecutive drained checks, 2 s apart, before stopping (default 3)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="source option, repeatable (e.g. --option maxFilesPerTrigger=500)")
    p.add_argument("--name", default="s3-sqs-ingest", help="query name")
    p.add_argument("--verbose", action="store_true", help="show Spark's own INFO logs (default: warnings only)")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sinks.add_arguments(p)
    args = p.parse_args(argv)
    args.options = {}
    for item in args.option:
        if "=" not in item or not item.split("=", 1)[0].strip():
            p.error(f"--option {item!r} must look like key=value")
        k, v = item.split("=", 1)
        args.options[k.strip()] = v
    args.partition_by = [c.strip() for c in args.partition_by.split(",") if c.strip()]
    if args.idle_checks < 1:
        p.error("--idle-checks must be at least 1")
    return args


def source_options(args: argparse.Namespace) -> dict[str, str]:
    from s3sqs.options import job_source_options
    return job_source_options(args.format, args.queue_url, args.checkpoint, args.options, args.region,
                              args.endpoint_url, args.state_location)


def preflight(args: argparse.Namespace, raw_options: dict[str, str]):
    """Everything that can be checked before Spark starts; returns the parsed source options, schema and sink."""
    from s3sqs import preflight as pf
    from s3sqs import sinks
    from s3sqs.ddl import parse_schema
    from s3sqs.options import parse_options

    schema = parse_schema(args.schema)
    if not args.transform:  # a transform may make the partition columns; the sink checks its output
        pf.check_partition_columns(args.partition_by, schema.names)
    opts = parse_options(raw_options)
    pf.check_partition_columns(list(opts.partition_columns), schema.names, "option partitionColumns")
    sink = sinks.check(args)  # the sink flags, and the --transform import
    pf.check_credentials()
    pf.check_queue(opts)
    pf.check_location("--checkpoint", args.checkpoint, opts)
    if args.state_location:
        pf.check_location("--state-location", args.state_location, opts)
    for flag, location in sink.locations():
        pf.check_location(flag, location, opts)
    return opts, schema, sink


def reprocess_dry_run(opts) -> int:
    """List the files a reprocess would ingest again, from the durable state, without Spark."""
    from s3sqs.driver import state_store
    from s3sqs.snapshots import Snapshots, private_copy

    with private_copy(Snapshots(state_store(opts))) as index:
        files = index.files_of_batches(opts.reprocess_start_batch_id, opts.reprocess_end_batch_id)
    for f in files:
        print(f"{f.seq}\t{f.uri}\t{f.size if f.size is not None else '-'} bytes")
    print(f"[job] reprocess dry run: batches {opts.reprocess_start_batch_id}..{opts.reprocess_end_batch_id} hold "
          f"{len(files)} files; run without reprocessDryRun to ingest them again", flush=True)
    return 0


def warm_python_workers(spark) -> None:
    """Start the executors' Python workers, with the reader's imports, before the query starts: a cold
    worker costs seconds before it reads its first file, and Spark reuses warm ones. Done first, not
    alongside the query's start, whose Python runner must connect back within Spark's fixed 10 s."""
    from s3sqs.warmup import register_warm_up
    slots = spark.sparkContext.defaultParallelism
    # A read of a Python data source, like the stream's, so it starts the same kind of worker.
    spark.read.format(register_warm_up(spark)).option("partitions", str(slots)).load().collect()


def run(args: argparse.Namespace) -> int:
    raw_options = source_options(args)
    opts, schema, sink = preflight(args, raw_options)
    if opts.reprocess_dry_run:
        return reprocess_dry_run(opts)

    from pyspark.sql import SparkSession

    from s3sqs import sinks
    from s3sqs.completion import CompletionCheck
    from s3sqs.monitor import BatchMonitor
    from s3sqs.source import register

    builder = SparkSession.builder.appName(args.name)
    if not args.verbose:
        builder = builder.config("spark.log.level", "WARN")
    spark = builder.getOrCreate()
    register(spark)
    raw_options.setdefault("minPartitions", str(spark.sparkContext.defaultParallelism))
    # The canonical DDL: Spark's reader takes no "name: type" form, which --schema may use.
    df = spark.readStream.format("s3-sqs").schema(schema.ddl).options(**raw_options).load()
    writer = (sinks.writer(df, sink, args.endpoint_url, args.region)
              .option("checkpointLocation", args.checkpoint).queryName(args.name)
              .trigger(processingTime=args.trigger_interval))
    warm_python_workers(spark)
    query = writer.start()
    print(f"[job] query {args.name} started: {args.queue_url} -> {sink.describe()}", flush=True)

    check = CompletionCheck(opts, args.checkpoint)
    monitor, idle = BatchMonitor(check, args.queue_url), 0
    try:
        while query.isActive:
            time.sleep(2)
            state = check()
            monitor.report(query.recentProgress, state)  # a line and an EMF document per batch
            if not args.until_drained:
                continue
            idle = idle + 1 if state.drained else 0
            log.debug("until drained: waiting for %s", state.waiting_for())
            if idle >= args.idle_checks:
                print("[job] queue drained and every planned batch committed; stopping", flush=True)
                break
        if query.exception():
            monitor.failed()
            raise QueryFailed(str(query.exception()))
    finally:
        query.stop()
    return 0


class QueryFailed(RuntimeError):
    """The streaming query stopped with an error."""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    debug = bool(os.environ.get("S3SQS_DEBUG"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("s3sqs").setLevel(logging.DEBUG if debug else logging.INFO)
    from s3sqs.ddl import SchemaError
    from s3sqs.options import OptionError
    from s3sqs.preflight import PreflightError
    try:
        return run(args)
    except (OptionError, PreflightError, SchemaError) as e:
        if args.debug:
            raise
        print(f"job.py: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except QueryFailed as e:
        if args.debug:
            raise
        print(f"job.py: the query failed: {_first_lines(str(e))}", file=sys.stderr, flush=True)
        return EXIT_FAILED


def _first_lines(text: str, n: int = 12) -> str:
    """Spark's error with its Python traceback trimmed to the part that names the cause."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    causes = [ln for ln in lines if "s3-sqs" in ln or "Error" in ln or "Exception" in ln]
    return "\n".join((causes or lines)[:n])


if __name__ == "__main__":
    sys.exit(main())
