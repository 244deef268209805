#!/usr/bin/env python3
"""Benchmark: how long a trickle of files waits, from its upload to its rows committed in the sink.

One small JSON file a second for --seconds, a 5-second trigger, a Parquet sink (this source's as the job
writes it: its read tasks write the files). This source reads them as S3 announces them (S3 -> SQS on the
local stand-in); Spark's own file source lists a local directory that gets the same files (written whole,
then renamed into place). The two run one after the other, in fresh processes, --reps times each in
alternating order. A file's latency is the time from its upload to the commit of the sink batch that
holds its rows. It prints median and p95 of both and the ratio, and the median time of each phase of a
batch on either side (Spark's durationMs).

Uploads fall at phases spread evenly over the second (file i at i + frac(0.5 + i * 0.618) s), so over the
trigger interval too. Spark fires a trigger at whole multiples of its interval: an upload at the very
instant a trigger fires goes into that batch or waits a whole interval, decided by which side looks
first, within milliseconds. With --aligned every upload falls on a whole second, as before, and every
fifth file (with a 5-second trigger) is such a coin toss.

With --s3, Spark's file source watches s3a://bucket/<folder>/ on the same moto server instead of a local
directory, and the files for it are uploaded there too (Hadoop's S3A filesystem: `make s3a-jars`, Spark
4.0.2 only). Each trigger then lists that folder over HTTP, as it would list S3.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from benchkit import batch_commit_times, percentile  # noqa: E402
from devtools.local_aws import wire_consumer  # noqa: E402
from devtools.local_spark import BENCH_SPARKS as SPARKS  # noqa: E402

SCHEMA = "id LONG, sent DOUBLE"
GOLDEN = (math.sqrt(5) - 1) / 2  # the phase step: frac(0.5 + i * GOLDEN) spreads evenly over [0, 1)


def upload_times(start: float, seconds: int, aligned: bool) -> list[float]:
    """When each of the trickle's files is uploaded: one a second, on whole seconds when aligned, else at
    phases spread evenly over the second."""
    return [start + i + (0.0 if aligned else (0.5 + i * GOLDEN) % 1.0) for i in range(seconds)]


def worker(kind: str, work: Path, seconds: int, trigger: str, endpoint: str, bucket: str, queue: str,
           on_s3: bool = False, aligned: bool = False) -> dict:
    import pyarrow.parquet as pq
    builder = benchkit.spark_builder(f"latency-{kind}")
    s3 = benchkit.aws_client("s3", endpoint)
    native_prefix = f"native-landing/{work.name}/"
    if kind == "native" and on_s3:
        builder = benchkit.with_s3a(builder, endpoint)
        s3.put_object(Bucket=bucket, Key=native_prefix, Body=b"")  # the folder exists before the query starts
    spark = builder.getOrCreate()
    landing = work / "landing"
    landing.mkdir(parents=True)
    if kind == "native":
        df = spark.readStream.format("json").schema(SCHEMA).load(
            f"s3a://{bucket}/{native_prefix}" if on_s3 else str(landing))
    else:
        benchkit.register_source(spark)
        opts = dict(fileFormat="json", queueUrl=queue, endpointUrl=endpoint, queueRegion="us-east-1",
                    stateLocation=str(work / "state"), minPartitions="2")
        df = spark.readStream.format("s3-sqs").schema(SCHEMA).options(**opts).load()
        benchkit.warm_python_workers(spark)
    rows_of = None
    if kind == "native":
        writer = df.writeStream.format("parquet").option("path", str(work / "table"))
    else:  # as the job writes the parquet sink (its read tasks write the files): Spark counts files, not rows
        from bench_read import job_writer
        writer, rows_of = job_writer(spark, df, opts, work, "parquet")
    q = writer.option("checkpointLocation", str(work / "ck")).trigger(processingTime=trigger).start()
    while not q.recentProgress:  # started and ran its first (empty) trigger
        time.sleep(0.1)
    sent: dict[int, float] = {}

    def trickle():
        for i, due in enumerate(upload_times(math.ceil(time.time()), seconds, aligned)):
            time.sleep(max(0.0, due - time.time()))
            body = json.dumps({"id": i, "sent": time.time()}).encode() + b"\n"
            if kind == "native" and on_s3:
                s3.put_object(Bucket=bucket, Key=f"{native_prefix}f-{i:04d}.json", Body=body)
            elif kind == "native":
                tmp = work / f".tmp-{i}"
                tmp.write_bytes(body)
                os.rename(tmp, landing / f"f-{i:04d}.json")
            else:
                s3.put_object(Bucket=bucket, Key=f"trickle/{kind}-{work.name}/f-{i:04d}.json", Body=body)
            sent[i] = time.time()
    t = threading.Thread(target=trickle)
    t.start()
    t.join()
    deadline = time.time() + 180
    while time.time() < deadline:
        if q.exception():
            raise SystemExit(f"{kind} failed: {q.exception()}")
        done = sum((rows_of(p["batchId"]) or 0) if rows_of else p["numInputRows"] for p in q.recentProgress)
        if done >= seconds:
            break
        time.sleep(0.2)
    time.sleep(1)
    phases = batch_phases(q.recentProgress)
    q.stop()
    spark.stop()
    commits = batch_commit_times(work / "table")
    latencies = []
    for name, committed in commits.items():
        for row in pq.read_table(work / "table" / name).to_pylist():
            latencies.append(committed - sent[row["id"]])
    if len(latencies) != seconds:
        raise SystemExit(f"{kind}: {len(latencies)} of {seconds} files reached the sink")
    return {"median": statistics.median(latencies), "p95": percentile(latencies, 0.95), "files": len(latencies),
            "phases": phases}


def batch_phases(progress: list[dict]) -> dict[str, float]:
    """Median milliseconds of each phase Spark reports (durationMs) over the batches that read rows: where a
    batch's time goes, on either side."""
    batches = [p["durationMs"] for p in progress if p.get("numInputRows")]
    medians = {k: statistics.median(d.get(k, 0) for d in batches) for k in {k for d in batches for k in d}}
    return dict(sorted(medians.items(), key=lambda kv: -kv[1]))


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--seconds", type=int, default=60, help="files uploaded, one a second (default 60)")
    p.add_argument("--trigger", default="5 seconds", help="trigger interval of both queries (default 5 seconds)")
    p.add_argument("--spark", help="which PySparks, in order (default 4.0.2,4.3; with --s3, 4.0.2)")
    p.add_argument("--s3", action="store_true", help="Spark's file source watches an s3a:// folder on the moto "
                                                     "server (Spark 4.0.2 only; make s3a-jars first)")
    benchkit.add_reps(p, 2)
    p.add_argument("--aligned", action="store_true", help="upload on whole seconds, so every trigger instant "
                                                          "meets an upload (the schedule before phases were spread)")
    benchkit.add_worker_flags(p, ["native", "s3sqs"], "--work", "--endpoint", "--bucket", "--queue")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.work), args.seconds, args.trigger, args.endpoint, args.bucket,
                                args.queue, args.s3, args.aligned)))
        return 0
    sparks = benchkit.sparks_or_s3(p, args)
    if args.seconds < 5 or args.reps < 1:
        p.error("--seconds must be at least 5 and --reps at least 1")
    benchkit.check_s3(p, args, sparks)
    return benchkit.on_moto(f"1 file/s for {args.seconds} s "
                            f"({'on whole seconds' if args.aligned else 'phases spread'}), trigger {args.trigger}; "
                            "Spark's file source "
                            f"{'lists s3a:// on the moto server' if args.s3 else 'lists a local directory'}",
                            lambda endpoint: compare(args, sparks, endpoint))


def compare(args, sparks: list[str], endpoint: str) -> None:
    """Both sides on the trickle, each Spark, --reps times in alternating order: each run's line, then the table."""
    rows = [(spark, benchkit.paired(args.reps, lambda rep, kind: run_one(args, spark, rep, kind, endpoint)))
            for spark in sparks]
    print(f"\n{'Spark':6s} {'native median/p95':>18s} {'s3-sqs median/p95':>18s} {'ratio (median)':>15s}")
    for spark, res in rows:
        nm = statistics.median(r["median"] for r in res["native"])
        npp = statistics.median(r["p95"] for r in res["native"])
        sm = statistics.median(r["median"] for r in res["s3sqs"])
        sp = statistics.median(r["p95"] for r in res["s3sqs"])
        print(f"{spark:6s} {nm:8.1f} / {npp:6.1f} s {sm:8.1f} / {sp:6.1f} s {sm / nm:15.2f}")


def run_one(args, spark: str, rep: int, kind: str, endpoint: str) -> dict:
    """One side's run on a fresh copy of the stack's wiring (bucket -> SNS -> queue), in a fresh process; its line."""
    name = f"lat-{spark.replace('.', '')}-{rep}-{kind}"
    path = wire_consumer(endpoint, name)
    with benchkit.scratch(f"{name}-") as work:
        out = benchkit.run_worker(SPARKS[spark], __file__,
                                  [kind, "--work", str(work), "--seconds", str(args.seconds), "--trigger",
                                   args.trigger, "--endpoint", endpoint, "--bucket", path.bucket, "--queue",
                                   path.queue_url, *(["--s3"] if args.s3 else []),
                                   *(["--aligned"] if args.aligned else [])],
                                  kind, timeout=900)[0]
    phases = ", ".join(f"{k} {v:,.0f}" for k, v in out["phases"].items())
    print(f"  Spark {spark:6s} {kind:7s} median {out['median']:5.1f} s  p95 {out['p95']:5.1f} s;"
          f" a batch's median ms: {phases}", flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
