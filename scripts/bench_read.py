#!/usr/bin/env python3
"""Benchmark: this source against Spark's own file source, on the same local files, into a Parquet sink.

For each format (small JSON-lines files, large CSV files, Parquet; small ORC, Avro and text files; one large
XML file) and each Spark (PySpark 4.3 in .venv,
4.0.2 in .venv-spark40), the two run in turn, in fresh processes, --reps times each, in alternating
order. A run is timed from the query's start to the moment its sink has committed every row. This
source finds the files by listing them once (includeExistingFiles, basePath=file://...), which is what
Spark's file source does too; the queue is an empty one on the local stand-in. It prints rows/s of both
and the ratio (>1: this source is faster).

With --s3 the files are uploaded to a bucket on the same moto server instead, and both read them from
there: this source lists s3://bucket/<format>/ once and reads the objects with pyarrow; Spark's file
source reads s3a://bucket/<format>/ through Hadoop's S3A filesystem (the jars `make s3a-jars` fetches,
for Spark 4.0.2's Hadoop 3.4.1; so --s3 runs on 4.0.2 only). moto serves both, so the figures compare
the two readers on one S3 stand-in, not S3 itself.

Spark's file source always writes with Spark's Parquet file sink. This source writes as the job does
without a transform: with --sink parquet (the default) its read tasks write the Parquet files and the job
writes the file sink's log (job/direct_write.py); with --sink parquet-spark through Spark's file sink, as
the job does with a transform or --table-writer spark. With --sink delta it writes a Delta table (its read
tasks write the files), with --sink delta-rebalanced after a shuffle, as with a transform. With --sink noop
both queries read every row and write nothing (Spark's `noop` sink): the read alone.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.local_aws import local_aws  # noqa: E402
from devtools.local_spark import BENCH_SPARKS as SPARKS  # noqa: E402

SCHEMA = "id LONG, user STRING, amount DOUBLE, country STRING, ts STRING"
FORMATS = {
    # format: (files, rows per file)
    "json": (2000, 50),
    "csv": (25, 300_000),       # about 20 MB each
    "parquet": (50, 100_000),
    "orc": (2000, 50),
    "avro": (2000, 50),
    "text": (2000, 50),
    "xml": (2000, 50),
    "csv-latin1": (25, 300_000),  # CSV in ISO-8859-1, a non-ASCII char in every row
}
SCHEMAS = {"text": "value STRING"}  # the others: SCHEMA
# A benchmark "format" that is a format read with options: (format, its options for both readers).
READ_AS = {"csv-latin1": ("csv", {"encoding": "ISO-8859-1"})}
# Spark's Avro reader is a separate jar, fetched from Maven Central when it can be (4.3.0's is not published).
AVRO_JAR = {"4.3": "4.2.0", "4.0": "4.0.2"}


# ------------------------------------------------------------------------------------------ data

def make_data(root: Path, fmt: str, files: int, rows: int) -> int:
    import fastavro
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    d = root / fmt
    d.mkdir(parents=True)
    for f in range(files):
        ids = pa.array(range(f * rows, (f + 1) * rows), pa.int64())
        t = pa.table({"id": ids, "user": pa.array([f"user-{i % 9973}" for i in range(rows)]),
                      "amount": pa.array([(i % 10000) / 7 for i in range(rows)]),
                      "country": pa.array([("de", "fr", "us", "jp", "br")[i % 5] for i in range(rows)]),
                      "ts": pa.array([f"2026-11-{1 + i % 28:02d}T12:00:00Z" for i in range(rows)])})
        path = d / f"part-{f:05d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(t, path)
        elif fmt == "orc":
            orc.write_table(t, path)
        elif fmt == "avro":
            schema = {"type": "record", "name": "Row", "fields": [
                {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
                {"name": "amount", "type": "double"}, {"name": "country", "type": "string"},
                {"name": "ts", "type": "string"}]}
            with open(path, "wb") as out:
                fastavro.writer(out, fastavro.parse_schema(schema), t.to_pylist(), codec="snappy")
        elif fmt == "text":
            with open(path, "w") as out:
                for rec in t.to_pylist():
                    out.write(",".join(str(v) for v in rec.values()) + "\n")
        elif fmt == "csv":
            pacsv.write_csv(t, path)
        elif fmt == "csv-latin1":
            out = pa.BufferOutputStream()
            pacsv.write_csv(t, out)
            path.write_bytes(out.getvalue().to_pybytes().decode().replace("user-", "usér-").encode("latin-1"))
        elif fmt == "xml":
            with open(path, "w") as out:
                out.write('<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n')
                for rec in t.to_pylist():
                    out.write("  <row>\n" + "".join(f"    <{k}>{v}</{k}>\n" for k, v in rec.items()) + "  </row>\n")
                out.write("</rows>\n")
        else:
            with open(path, "w") as out:
                for rec in t.to_pylist():
                    out.write(json.dumps(rec) + "\n")
    return files * rows


# ---------------------------------------------------------------------------------------- worker

def worker(kind: str, fmt: str, data: str, out: Path, expected: int, endpoint: str, queue_url: str,
           sink: str = "parquet") -> dict:
    import pyspark

    from devtools.local_spark import wait_for_rows
    builder = benchkit.spark_builder(f"bench-{kind}", os.environ.get("BENCH_LOG_LEVEL", "ERROR"))
    on_s3 = data.startswith("s3://")
    location = f"{data.rstrip('/')}/{fmt}"
    if on_s3 and kind == "native":
        builder = benchkit.with_s3a(builder, endpoint)
    schema = SCHEMAS.get(fmt, SCHEMA)
    fmt, options = READ_AS.get(fmt, (fmt, {}))
    if kind == "native" and fmt == "avro":
        jar = AVRO_JAR.get(".".join(pyspark.__version__.split(".")[:2]))
        try:
            if not jar:
                raise RuntimeError(f"no spark-avro for Spark {pyspark.__version__}")
            spark = builder.config("spark.jars.packages", f"org.apache.spark:spark-avro_2.13:{jar}").getOrCreate()
        except Exception as e:
            return {"unavailable": f"no Spark reader ({type(e).__name__})"}
    else:
        spark = builder.getOrCreate()
    if kind == "native":
        reader = spark.readStream.format(fmt).schema(schema).options(**options)
        if fmt == "csv":
            reader = reader.option("header", "true")
        if fmt == "xml":
            reader = reader.option("rowTag", "row")
        df = reader.load(location.replace("s3://", "s3a://", 1) if on_s3 else location)
    else:
        benchkit.register_source(spark)
        opts = {"fileFormat": fmt, "queueUrl": queue_url, "endpointUrl": endpoint, "queueRegion": "us-east-1",
                "stateLocation": str(out / "state"), "basePath": f"{location}/" if on_s3 else f"file://{location}/",
                "includeExistingFiles": "true", "maxFilesPerTrigger": "-1",
                "minPartitions": str(spark.sparkContext.defaultParallelism), **options}
        if fmt == "csv":
            opts["header"] = "true"
        if fmt == "xml":
            opts["rowTag"] = "row"
        df = spark.readStream.format("s3-sqs").schema(schema).options(**opts).load()
        if not os.environ.get("BENCH_NO_WARMUP"):
            benchkit.warm_python_workers(spark, fmt)
    t0 = time.perf_counter()
    if os.environ.get("BENCH_DETAIL"):
        print(f"query start at {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
    rows_of = None
    if sink != "noop" and kind == "s3sqs":
        writer, rows_of = job_writer(spark, df, opts, out, sink)
    else:
        sink = "noop" if sink == "noop" else "parquet"  # Spark's file source: Spark's Parquet file sink
        writer = df.writeStream.format(sink)
        writer = writer.option("path", str(out / "table")) if sink == "parquet" else writer
    q = writer.option("checkpointLocation", str(out / "ck")).start()
    rows, batches = wait_for_rows(q, expected, f"{kind} {fmt}", rows_of=rows_of)
    seconds = time.perf_counter() - t0
    if os.environ.get("BENCH_DETAIL"):
        for p in q.recentProgress:
            print(json.dumps({"batch": p["batchId"], "at": p["timestamp"], "rows": p["numInputRows"], **p["durationMs"]}),
                  file=sys.stderr)
    q.stop()
    spark.stop()
    return {"seconds": seconds, "rows": rows, "batches": batches}


def job_writer(spark, df, options: dict, out: Path, sink: str):
    """The job's writer into `sink` (no transform): parquet and delta as the job writes them by default,
    parquet-spark through Spark's file sink, delta-rebalanced after a shuffle; and the rows of each batch."""
    from types import SimpleNamespace

    from s3sqs.job import direct_write
    from s3sqs.sinks import kinds
    delta = sink.startswith("delta")
    flags = dict(sink="delta" if delta else "parquet", table=str(out / "delta") if delta else None,
                 output=None if delta else str(out / "table"), rebalance_writes=sink == "delta-rebalanced",
                 table_writer="spark" if sink == "parquet-spark" else None, partition_by=(),
                 target_file_size=None, transform=None, catalog=None, catalog_uri=None, warehouse=None)
    writer, rows_of, refusal = direct_write.query_writer(spark, options, df,
                                                         kinds.from_flags(SimpleNamespace(**flags)))
    if refusal:  # the benchmark's columns are always the read tasks' to write
        raise SystemExit(f"bench_read: the read tasks cannot write {sink}: {refusal}")
    return writer, rows_of


# ------------------------------------------------------------------------------------ orchestrator

S3_BUCKET = "bench-read"


def upload(s3, folder: Path, fmt: str) -> None:
    """The format's files into s3://S3_BUCKET/<format>/, a few at a time (moto takes ~100-150 PUTs/s)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda p: s3.upload_file(str(p), S3_BUCKET, f"{fmt}/{p.name}"), sorted(folder.iterdir())))


def run_one(python: Path, kind: str, fmt: str, data: str, expected: int, endpoint: str, queue: str,
            sink: str) -> dict:
    with benchkit.scratch(f"bench-{kind}-") as out:
        return benchkit.run_worker(python, __file__, [kind, "--format", fmt, "--data", data, "--out", str(out),
                                                      "--expected", str(expected), "--endpoint", endpoint,
                                                      "--queue", queue, "--sink", sink],
                                   f"{kind} {fmt}", timeout=1800)[0]


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--formats", default="json,csv,parquet")
    p.add_argument("--spark", help="which PySparks, in order (default 4.0.2,4.3; with --s3, 4.0.2)")
    benchkit.add_reps(p, 3)
    p.add_argument("--scale", type=float, default=1.0, help="multiply the number of files (default 1)")
    p.add_argument("--files", type=int, help="files per format instead of its default (then --scale is not used)")
    p.add_argument("--rows", type=int, help="rows per file instead of the format's default (e.g. --formats xml "
                                            "--files 8 --rows 125000: eight XML files of about 20 MB)")
    p.add_argument("--s3", action="store_true", help="read from a bucket on the moto server (Spark's file source "
                                                     "through s3a://; Spark 4.0.2 only; make s3a-jars first)")
    p.add_argument("--sink", choices=["parquet", "parquet-spark", "noop", "delta", "delta-rebalanced"],
                   default="parquet",
                   help="this source's sink: parquet (default) and delta as the job writes them without a "
                        "transform, parquet-spark and delta-rebalanced as with one; noop: read every row and "
                        "write nothing (Spark's file source: Spark's Parquet file sink, or noop)")
    benchkit.add_worker_flags(p, ["native", "s3sqs"], "--format", "--data", "--out", "--expected", "--endpoint",
                              "--queue")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.format, args.data, Path(args.out), int(args.expected),
                                args.endpoint, args.queue, args.sink)))
        return 0

    formats = [f for f in args.formats.split(",") if f]
    sparks = benchkit.sparks_or_s3(p, args)
    for f in formats:
        if f not in FORMATS:
            p.error(f"--formats: unknown format {f!r}; choose from {', '.join(FORMATS)}")
    if args.reps < 1:
        p.error("--reps must be at least 1")
    for flag, value in (("--files", args.files), ("--rows", args.rows)):
        if value is not None and value < 1:
            p.error(f"{flag} must be at least 1, not {value}")
    benchkit.check_s3(p, args, sparks)
    with local_aws() as server, benchkit.scratch("bench-read-data-") as data:
        return compare(args, formats, sparks, server.endpoint_url, data)


def compare(args, formats: list[str], sparks: list[str], endpoint: str, data: Path) -> int:
    """Both readers on each format and Spark, --reps times in alternating order: each run's line, then the table."""
    queue = benchkit.aws_client("sqs", endpoint).create_queue(QueueName="bench-read")["QueueUrl"]
    s3 = benchkit.aws_client("s3", endpoint)
    if args.s3:
        s3.create_bucket(Bucket=S3_BUCKET)
    print(f"{benchkit.header()}; {args.reps} runs each, "
          f"alternating; times from query start to the last row committed, into a {args.sink} sink; files "
          f"{'in s3://' + S3_BUCKET + ' on the moto server' if args.s3 else 'on local disk'}", flush=True)
    results = []
    for fmt in formats:
        files, rows = FORMATS[fmt]
        files = args.files or max(1, int(files * args.scale))
        rows = args.rows or rows
        expected = make_data(data, fmt, files, rows)
        size = sum(p.stat().st_size for p in (data / fmt).iterdir())
        source = str(data)
        if args.s3:
            upload(s3, data / fmt, fmt)
            source = f"s3://{S3_BUCKET}"
        for spark in sparks:
            n, s, ratios = paired_runs(args, spark, fmt, source, expected, endpoint, queue)
            results.append((fmt, spark, files, size, expected, n, s, ratios))
        shutil.rmtree(data / fmt)
    print_table(results)
    benchkit.print_end_load()
    return 0


def paired_runs(args, spark: str, fmt: str, source: str, expected: int, endpoint: str, queue: str):
    """(native median seconds or None, this source's median seconds, sorted ratios of the paired runs)."""
    times = {"native": [], "s3sqs": []}
    kinds = ["native", "s3sqs"]
    for rep in range(args.reps):
        for kind in benchkit.in_turn(rep, kinds):
            r = run_one(SPARKS[spark], kind, fmt, source, expected, endpoint, queue, args.sink)
            if "unavailable" in r:  # Spark's reader cannot be loaded here: only this source's figure
                print(f"  {fmt:8s} Spark {spark:6s} native  {r['unavailable']}", flush=True)
                kinds = ["s3sqs"]
                continue
            times[kind].append(r["seconds"])
            print(f"  {fmt:8s} Spark {spark:6s} {kind:7s} {r['seconds']:6.1f} s  ({r['batches']} batches)",
                  flush=True)
    n = statistics.median(times["native"]) if times["native"] else None
    s = statistics.median(times["s3sqs"])
    return n, s, sorted(a / b for a, b in zip(times["native"], times["s3sqs"]))


def print_table(results: list[tuple]) -> None:
    print(f"\n{'format':8s} {'Spark':6s} {'files':>6s} {'MB':>6s} {'rows':>9s} {'native rows/s':>14s} "
          f"{'s3-sqs rows/s':>14s} {'ratio':>6s}  (median; ratios of the paired runs)")
    for fmt, spark, files, size, expected, n, s, ratios in results:
        if n is None:
            print(f"{fmt:8s} {spark:6s} {files:6d} {size / 1e6:6.0f} {expected:9d} {'no Spark reader':>14s} "
                  f"{expected / s:14,.0f} {'-':>6s}")
            continue
        print(f"{fmt:8s} {spark:6s} {files:6d} {size / 1e6:6.0f} {expected:9d} {expected / n:14,.0f} "
              f"{expected / s:14,.0f} {n / s:6.2f}  ({benchkit.ratios_text(ratios)})")


if __name__ == "__main__":
    sys.exit(main())
