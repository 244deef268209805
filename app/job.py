"""The streaming job: s3-sqs source -> Parquet file sink. The same file is the EMR Serverless entry point.

Local use:  .venv/bin/spark-submit app/job.py --queue-url URL --format csv --schema "id LONG, name STRING" \
                --checkpoint /tmp/ck --output /tmp/out --until-drained
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


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="job.py", description="Stream S3 files announced on SQS into a Parquet table.")
    p.add_argument("--queue-url", required=True, help="the consumer's SQS queue URL")
    p.add_argument("--format", required=True, choices=["csv", "json", "parquet"], help="format of the S3 files")
    p.add_argument("--schema", required=True, help='schema as a DDL string, e.g. "id LONG, name STRING"')
    p.add_argument("--checkpoint", required=True, help="checkpoint location (local path or s3://)")
    p.add_argument("--output", required=True, help="output table location (Parquet files)")
    p.add_argument("--partition-by", default="", help="comma-separated output partition columns")
    p.add_argument("--state-location", help="source state location (default: CHECKPOINT/source-state)")
    p.add_argument("--endpoint-url", help="S3/SQS-compatible endpoint, e.g. the local stand-in")
    p.add_argument("--region", help="AWS region of the queue (default: from the URL or the environment)")
    p.add_argument("--trigger-interval", default="5 seconds", help="micro-batch interval (default: 5 seconds)")
    p.add_argument("--until-drained", action="store_true",
                   help="stop once the queue is empty and everything planned is committed")
    p.add_argument("--idle-checks", type=int, default=3,
                   help="with --until-drained: consecutive empty-queue checks before stopping (default 3)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="source option, repeatable (e.g. --option maxFilesPerTrigger=500)")
    p.add_argument("--name", default="s3-sqs-ingest", help="query name")
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
    opts = {
        "fileFormat": args.format,
        "queueUrl": args.queue_url,
        "stateLocation": args.state_location or args.checkpoint.rstrip("/") + "/source-state",
        "quarantineLocation": args.checkpoint.rstrip("/") + "/quarantine",
    }
    if args.endpoint_url:
        opts["endpointUrl"] = args.endpoint_url
    if args.region:
        opts["queueRegion"] = args.region
    opts.update(args.options)
    return opts


def warm_python_workers(spark) -> None:
    """Start the executors' Python workers, with the reader's imports, while the query starts: a cold
    worker costs seconds before it reads its first file, and Spark reuses warm ones."""
    import threading

    from s3sqs.warmup import register_warm_up
    slots = spark.sparkContext.defaultParallelism
    # A read of a Python data source, like the stream's, so it starts the same kind of worker.
    warm = spark.read.format(register_warm_up(spark)).option("partitions", str(slots)).load()
    threading.Thread(target=warm.collect, name="warm-python-workers", daemon=True).start()


def run(args: argparse.Namespace) -> int:
    from pyspark.sql import SparkSession

    from s3sqs import completion
    from s3sqs.options import parse_options
    from s3sqs.source import register

    raw_options = source_options(args)
    opts = parse_options(raw_options)  # bad options fail here, before Spark starts
    spark = SparkSession.builder.appName(args.name).getOrCreate()
    register(spark)
    raw_options.setdefault("minPartitions", str(spark.sparkContext.defaultParallelism))
    df = spark.readStream.format("s3-sqs").schema(args.schema).options(**raw_options).load()
    missing = [c for c in args.partition_by if c not in df.columns]
    if missing:
        raise SystemExit(f"--partition-by columns {missing} are not in --schema")
    writer = (df.writeStream.format("parquet").option("path", args.output)
              .option("checkpointLocation", args.checkpoint).queryName(args.name)
              .trigger(processingTime=args.trigger_interval))
    if args.partition_by:
        writer = writer.partitionBy(*args.partition_by)
    warm_python_workers(spark)
    query = writer.start()
    log.info("query %s started: %s -> %s", args.name, args.queue_url, args.output)
    if not args.until_drained:
        query.awaitTermination()
        return 0

    check = completion.CompletionCheck(opts, args.checkpoint)
    idle, shown = 0, None
    try:
        while query.isActive:
            time.sleep(2)
            progress = query.lastProgress
            if progress and progress.get("numInputRows") and progress["batchId"] != shown:
                shown = progress["batchId"]
                print(f"[job] batch {progress['batchId']}: {progress['numInputRows']} rows "
                      f"({progress.get('processedRowsPerSecond', 0):.0f} rows/s)", flush=True)
            state = check()
            idle = idle + 1 if state.drained else 0
            log.debug("until drained: waiting for %s", state.waiting_for())
            if idle >= args.idle_checks:
                print("[job] queue drained and every planned batch committed; stopping", flush=True)
                break
        if query.exception():
            raise query.exception()
    finally:
        query.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.DEBUG if os.environ.get("S3SQS_DEBUG") else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
