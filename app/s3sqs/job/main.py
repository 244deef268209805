"""The streaming job: s3-sqs source -> optional transform -> Parquet files, or a Delta or Iceberg table.
app/job.py runs `main` (it is the EMR Serverless entry point).

Local use:  .venv/bin/spark-submit app/job.py --queue-url URL --format csv [--schema "id LONG, name STRING"] \
                --checkpoint /tmp/ck --output /tmp/out --until-drained

Exit codes (core.errors): 0 done (or stopped), 1 the query failed, 2 a flag or option is wrong (found
before Spark starts).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from ..core.errors import EXIT_NOT_DONE, EXIT_USAGE, S3SqsError, UsageError
from ..core.units import parse_duration_seconds
from .executors import ExecutorCoresFile
from .flags import DEFAULT_TRIGGER_INTERVAL, parse_job_args

log = logging.getLogger("s3sqs.job")
IDLE_CHECK_SECONDS = 2   # a stream's progress lines and metrics
DRAIN_CHECK_SECONDS = 0.5  # --until-drained: how soon a drained queue and a committed batch end the run
MAX_SCHEMA_RESTARTS = 20  # restarts for new columns in one run (addNewColumns); more means something is off


class QueryFailed(S3SqsError):
    """The streaming query stopped with an error."""


def source_options(args: argparse.Namespace) -> dict[str, str]:
    from ..config.options import job_source_options
    return job_source_options(args.format, args.queue_url, args.checkpoint, args.options, args.region,
                              args.endpoint_url, args.state_location)


def preflight(args: argparse.Namespace, raw_options: dict[str, str]):
    """Everything that can be checked before Spark starts; returns the parsed source options, schema and sink."""
    from .. import sinks
    from ..config.ddl import parse_schema
    from ..config.format_options import unreadable_column
    from ..config.options import parse_options
    from . import preflight as pf

    schema = parse_schema(args.schema) if args.schema else None  # None: inferred, kept under schemaLocation
    if schema is not None and not args.transform:  # a transform may make the partition columns
        pf.check_columns("--partition-by", args.partition_by, schema.names)
    opts = parse_options(raw_options)
    if schema is not None:
        pf.check_columns("option partitionColumns", list(opts.partition_columns), schema.names)
        problem = unreadable_column(opts.file_format, [(c.name, c.type.simple) for c in schema.columns])
        if problem:
            raise pf.PreflightError(f"--schema: {problem}")
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
    from ..core import aws
    from ..state.snapshots import Snapshots, private_copy
    from ..state.store import open_store

    with private_copy(Snapshots(open_store(opts.state_location, aws.lazy_client("s3", opts.endpoint)))) as index:
        files = index.files_of_batches(opts.reprocess_start_batch_id, opts.reprocess_end_batch_id)
    for f in files:
        print(f"{f.seq}\t{f.uri}\t{f.size if f.size is not None else '-'} bytes")
    print(f"[job] reprocess dry run: batches {opts.reprocess_start_batch_id}..{opts.reprocess_end_batch_id} hold "
          f"{len(files)} files; run without reprocessDryRun to ingest them again", flush=True)
    return 0


def warm_python_workers(spark, file_format: str | None = None) -> None:
    """Start the executors' Python workers, with the reader's imports, before the query starts: a cold
    worker costs seconds before it reads its first file, and Spark reuses warm ones. Done first, not
    alongside the query's start, whose Python runner must connect back within Spark's fixed 10 s.
    Only a stream without an end warms up (its first files arrive at warm workers); a run that ends when
    drained would pay the workers' start either way, and the warm-up's own Spark job on top."""
    from .warmup import register_warm_up
    slots = spark.sparkContext.defaultParallelism
    # A read of a Python data source, like the stream's, so it starts the same kind of worker.
    reader = spark.read.format(register_warm_up(spark)).option("partitions", str(slots))
    if file_format:
        reader = reader.option("fileFormat", file_format)
    reader.load().collect()


def run(args: argparse.Namespace) -> int:
    raw_options = source_options(args)
    opts, schema, sink = preflight(args, raw_options)
    if opts.reprocess_dry_run:
        return reprocess_dry_run(opts)

    from pyspark.sql import SparkSession

    from .. import sinks
    from ..planning.source import register

    builder = SparkSession.builder.appName(args.name)
    if not args.verbose:
        builder = builder.config("spark.log.level", "WARN")
    for key, value in sinks.session_conf(sink, opts.endpoint).items():  # Spark's own table writers
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    # Each batch's partitions follow the executors present when it is planned (planning/slots.py).
    cores = ExecutorCoresFile(spark).start()
    raw_options.setdefault("executorCoresFile", cores.path)
    try:
        if not args.until_drained:
            warm_python_workers(spark, opts.file_format)
        evolving = (opts.schema_evolution_mode or ("addNewColumns" if schema is None else "none")) == "addNewColumns"
        for restart in range(MAX_SCHEMA_RESTARTS + 1):
            try:
                return run_query(spark, args, raw_options, schema, sink, opts)
            except QueryFailed as e:
                if not (evolving and "NewColumnsFound" in str(e)) or restart == MAX_SCHEMA_RESTARTS:
                    raise
                print(f"[job] {_new_columns_line(str(e))}; restarting the query with the evolved schema", flush=True)
    finally:
        cores.stop()
    return EXIT_NOT_DONE  # not reached: the last attempt returns or raises


def run_query(spark, args: argparse.Namespace, raw_options: dict[str, str], schema, sink, opts) -> int:
    """One streaming query, from start to drained (--until-drained) or failure."""
    from .. import sinks
    from . import direct_write
    from .completion import CompletionCheck
    from .monitor import BatchMonitor
    from . import preflight as pf

    reader = spark.readStream.format("s3-sqs").options(**raw_options)
    if schema is not None:  # the canonical DDL: Spark's reader takes no "name: type" form, which --schema may use
        reader = reader.schema(schema.ddl)
    df = reader.load()  # without a schema, Spark asks the source: stored under schemaLocation, or inferred now
    if schema is None:
        print(f"[job] schema from {opts.schema_location}: {df.schema.simpleString()}", flush=True)
        if not args.transform:
            pf.check_columns("--partition-by", args.partition_by, df.columns)
    interval_ms = int(parse_duration_seconds(args.trigger_interval or DEFAULT_TRIGGER_INTERVAL, None) * 1000)
    writer, rows_of, refusal = direct_write.query_writer(spark, raw_options, df, sink, opts.endpoint)
    if refusal:
        print(f"[job] Spark's file sink writes this output; the read tasks cannot: {refusal}", flush=True)
    writer = (writer.option("checkpointLocation", args.checkpoint).queryName(args.name)
              .trigger(processingTime=f"{interval_ms} milliseconds"))
    query = sinks.start(writer, sink)
    how = " (files written by the read tasks)" if rows_of is not None else ""
    print(f"[job] query {args.name} started: {args.queue_url} -> {sink.describe()}{how}", flush=True)

    check = CompletionCheck(opts, args.checkpoint)
    monitor, idle = BatchMonitor(check, args.queue_url, rows_of=rows_of), 0
    try:
        while query.isActive:
            time.sleep(DRAIN_CHECK_SECONDS if args.until_drained else IDLE_CHECK_SECONDS)
            progresses = query.recentProgress
            state = check.when_needed(bool(monitor.unreported(progresses)), args.until_drained)
            monitor.report(progresses, state)  # a line and an EMF document per batch
            if not args.until_drained:
                continue
            # Not before the first trigger: until the source's first offset call, a backfill it is to start
            # (includeExistingFiles, an inventory report) is in no status yet, and an empty queue looks drained.
            started = query.lastProgress is not None
            idle = idle + 1 if started and state.drained else 0
            log.debug("until drained: waiting for %s", state.waiting_for() if started else "the first trigger")
            if idle >= args.idle_checks:
                print("[job] queue drained and every planned batch committed; stopping", flush=True)
                break
        if query.exception():
            monitor.failed()
            raise QueryFailed(str(query.exception()))
    finally:
        query.stop()
    return 0


def _new_columns_line(text: str) -> str:
    """The source's one line about new columns, out of Spark's error and its traceback."""
    line = next((ln for ln in text.splitlines() if "NewColumnsFound:" in ln), text.splitlines()[0] if text else "")
    return line[line.find("NewColumnsFound:"):].strip() if "NewColumnsFound:" in line else line.strip()


def main(argv: list[str] | None = None) -> int:
    args = parse_job_args(sys.argv[1:] if argv is None else argv)
    debug = bool(os.environ.get("S3SQS_DEBUG"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("s3sqs").setLevel(logging.DEBUG if debug else logging.INFO)
    try:
        return run(args)
    except UsageError as e:
        if args.debug:
            raise
        print(f"job.py: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except QueryFailed as e:
        if args.debug:
            raise
        print(f"job.py: the query failed: {_first_lines(str(e))}", file=sys.stderr, flush=True)
        return EXIT_NOT_DONE


def _first_lines(text: str, n: int = 12) -> str:
    """Spark's error with its Python traceback trimmed to the part that names the cause."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    causes = [ln for ln in lines if "s3-sqs" in ln or "Error" in ln or "Exception" in ln]
    return "\n".join((causes or lines)[:n])
