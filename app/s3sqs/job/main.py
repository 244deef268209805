"""The streaming job: s3-sqs source -> optional transform -> Parquet files, or a Delta or Iceberg table.
app/job.py runs `main` (it is the EMR Serverless entry point). This module is the process: its flags, its
Spark session and its exit code; query.py runs the streaming query.

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

from ..core.errors import EXIT_NOT_DONE, EXIT_USAGE, UsageError
from .executors import ExecutorCoresFile
from .flags import parse_job_args
from .monitor import QueryFailed
from .query import run_query


def run(args: argparse.Namespace) -> int:
    from .preflight import prepare

    job = prepare(args)  # everything that can be checked before Spark starts
    if job.options.reprocess_dry_run:
        from ..planning.reprocess import dry_run
        return dry_run(job.options)

    from pyspark.sql import SparkSession

    from ..planning.source import register

    builder = SparkSession.builder.appName(args.name)
    if not args.verbose:
        builder = builder.config("spark.log.level", "WARN")
    for key, value in job.sink.session_conf().items():  # Spark's own table writers
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    # Each batch's partitions follow the executors present when it is planned (planning/slots.py).
    cores = ExecutorCoresFile(spark).start()
    job.spark_options.setdefault("executorCoresFile", cores.path)
    try:
        if not args.until_drained:
            from .warmup import warm_python_workers
            warm_python_workers(spark, job.options.file_format)
        return run_query(spark, args, job)
    finally:
        cores.stop()


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
