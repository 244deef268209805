#!/usr/bin/env python3
"""Benchmark: latestFirst while a backlog drains, against the same run without it.

A backlog of --backlog small JSON files is announced before the query starts; once the first batch has
committed (and, with latestFirst, once the source has received the whole backlog from the queue), one
fresh file a second is uploaded, through S3 -> SNS -> SQS on the local stand-in, for --seconds. On SQS
the source receives thousands of messages a second, but moto's ReceiveMessage walks every message of the
queue (about a second a call at a thousand messages, here), so on moto the fresh files would otherwise
wait for moto, not for the source.
`maxFilesPerTrigger` caps every batch, so the backlog takes many batches. A fresh file's latency is the
time from its upload to the commit of the sink batch that holds its rows. The same run without
latestFirst is the peer: there the fresh files wait behind the backlog. Both runs receive with
sqs.maxConcurrency 10 (the moto server slows down under fifty receives of a queue of thousands). Both runs
count every row, so a
file lost or read twice fails the benchmark. Prints the fresh files' median and p95 latency, the trigger
interval and the median batch time, the goal (two triggers plus one batch) and the ratio of the two runs.
"""
from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.local_aws import wire_consumer  # noqa: E402
from devtools.local_spark import BENCH_SPARKS as SPARKS, sparks_of  # noqa: E402

SCHEMA = "id LONG, sent DOUBLE"
FRESH_IDS = 1_000_000  # fresh files' ids start here; the backlog's are below


def upload_backlog(endpoint: str, queue_url: str, n: int) -> None:
    """The backlog's files, in a bucket of their own, announced by S3 events sent straight to the consumer's
    queue, ten at a time: through the stand-in's bucket -> SNS -> SQS path, one upload a time, thousands
    take many minutes here."""
    from bench_driver import event_body
    s3 = benchkit.aws_client("s3", endpoint)
    sqs = benchkit.aws_client("sqs", endpoint)
    bucket = f"history-{queue_url.rsplit('/', 1)[-1]}"[:63].lower()
    s3.create_bucket(Bucket=bucket)
    t_ms = int(time.time() * 1000)

    def put(chunk: range) -> None:
        entries = []
        for i in chunk:
            body = json.dumps({"id": i, "sent": 0}).encode()
            s3.put_object(Bucket=bucket, Key=f"backlog/f-{i:06d}.json", Body=body)
            entries.append({"Id": str(i), "MessageBody": event_body(i, t_ms, bucket, f"backlog/f-{i:06d}.json",
                                                                    len(body))})
        sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
    with ThreadPoolExecutor(8) as pool:
        for done, _ in enumerate(pool.map(put, [range(i, min(n, i + 10)) for i in range(0, n, 10)]), 1):
            if done % 100 == 0:
                print(f"    backlog: {done * 10}/{n} uploaded and announced", file=sys.stderr, flush=True)


def worker(latest_first: bool, work: Path, seconds: int, trigger: str, max_files: int, backlog: int,
           endpoint: str, bucket: str, queue: str) -> dict:
    import pyarrow.parquet as pq

    spark = benchkit.spark_builder("latest-first").getOrCreate()
    benchkit.register_source(spark)
    s3 = benchkit.aws_client("s3", endpoint)
    df = (spark.readStream.format("s3-sqs").schema(SCHEMA)
          .options(fileFormat="json", queueUrl=queue, endpointUrl=endpoint, queueRegion="us-east-1",
                   stateLocation=str(work / "state"), maxFilesPerTrigger=str(max_files),
                   latestFirst=str(latest_first).lower(), **{"sqs.maxConcurrency": "10"}).load())
    benchkit.warm_python_workers(spark)
    q = (df.writeStream.format("parquet").option("path", str(work / "table"))
         .option("checkpointLocation", str(work / "ck")).trigger(processingTime=trigger).start())
    total = backlog + seconds
    deadline = time.time() + 1800
    while not any(p["numInputRows"] for p in q.recentProgress):  # the backlog's first batch is in
        if q.exception() or time.time() > deadline:
            raise SystemExit(f"the query failed or never started: {q.exception()}")
        time.sleep(0.1)
    waited = time.time()
    if latest_first:  # the source has taken the backlog from the queue (on SQS, seconds; see the module's notes)
        sqs = benchkit.aws_client("sqs", endpoint)
        while sum(int(v) for v in sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=[
                "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"].values()):
            if q.exception() or time.time() > deadline:
                raise SystemExit(f"the backlog never left the queue: {q.exception()}")
            time.sleep(0.5)
    waited = time.time() - waited
    batches_before = sum(1 for p in q.recentProgress if p["numInputRows"])
    sent: dict[int, float] = {}

    def trickle():
        for i in range(seconds):
            body = json.dumps({"id": FRESH_IDS + i, "sent": time.time()}).encode()
            s3.put_object(Bucket=bucket, Key=f"fresh/f-{i:04d}.json", Body=body)
            sent[FRESH_IDS + i] = time.time()
            time.sleep(max(0.0, 1.0 - (time.time() % 1.0)))
    t = threading.Thread(target=trickle)
    t.start()
    t.join()
    while sum(p["numInputRows"] for p in q.recentProgress) < total:
        if q.exception() or time.time() > deadline:
            raise SystemExit(f"not drained: {q.exception()}")
        time.sleep(0.5)
    time.sleep(1)
    batch_ms = [p["durationMs"]["triggerExecution"] for p in q.recentProgress if p["numInputRows"]]
    q.stop()
    spark.stop()
    latencies, ids = [], []
    for name, committed in benchkit.batch_commit_times(work / "table").items():
        for row in pq.read_table(work / "table" / name).to_pylist():
            ids.append(row["id"])
            if row["id"] >= FRESH_IDS:
                latencies.append(committed - sent[row["id"]])
    expected = list(range(backlog)) + list(range(FRESH_IDS, FRESH_IDS + seconds))
    if sorted(ids) != expected:
        raise SystemExit(f"{len(ids)} rows for {total} files ({len(set(ids))} distinct): lost or read twice")
    if len(batch_ms) - batches_before < 3:
        raise SystemExit(f"the backlog was drained before the fresh files came ({batches_before} of {len(batch_ms)} "
                         "batches): give a larger --backlog or a smaller --max-files")
    return {"median": statistics.median(latencies), "p95": benchkit.percentile(latencies, 0.95),
            "batch_s": statistics.median(batch_ms) / 1000, "batches": len(batch_ms), "rows": len(ids),
            "waited_s": waited, "batches_before": batches_before}


def seconds_of(trigger: str) -> float:
    n, unit = trigger.split()
    return float(n) * (60 if unit.startswith("minute") else 1)


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--backlog", type=int, default=1000, help="files announced before the query starts (1000)")
    p.add_argument("--seconds", type=int, default=30, help="fresh files, one a second, during the drain (30)")
    p.add_argument("--max-files", type=int, default=20, help="maxFilesPerTrigger (20)")
    p.add_argument("--trigger", default="5 seconds", help="trigger interval (5 seconds)")
    p.add_argument("--spark", default="4.0.2,4.3", help="which PySparks, in order (4.0.2,4.3)")
    p.add_argument("--verbose", action="store_true", help="print the source's log lines of each run")
    benchkit.add_worker_flags(p, ["on", "off"], "--work", "--endpoint", "--bucket", "--queue")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker == "on", Path(args.work), args.seconds, args.trigger, args.max_files,
                                args.backlog, args.endpoint, args.bucket, args.queue)))
        return 0
    sparks = sparks_of(p, args.spark)
    if args.backlog < args.max_files * 3 or args.seconds < 5 or args.max_files < 1:
        p.error("--backlog must be at least three batches, --seconds at least 5, --max-files at least 1")
    return benchkit.on_moto(f"backlog {args.backlog} files, then 1 fresh file/s for {args.seconds} s; "
                            f"maxFilesPerTrigger {args.max_files}, trigger {args.trigger}",
                            lambda endpoint: compare(args, sparks, endpoint))


def compare(args, sparks: list[str], endpoint: str) -> None:
    """With and without latestFirst on each Spark: each run's line, then the table."""
    rows = [(spark, {mode: run_one(args, spark, mode, endpoint) for mode in ("on", "off")}) for spark in sparks]
    trig = seconds_of(args.trigger)
    print(f"\n{'Spark':6s} {'with (median/p95)':>18s} {'without':>16s} {'goal: 2 triggers + 1 batch':>28s} "
          f"{'without/with':>13s}")
    for spark, res in rows:
        on, off = res["on"], res["off"]
        goal = 2 * trig + on["batch_s"]
        print(f"{spark:6s} {on['median']:7.1f} / {on['p95']:6.1f} s {off['median']:6.1f} / {off['p95']:6.1f} s "
              f"{goal:20.1f} s ({'met' if on['median'] <= goal else 'NOT met'}) {off['median'] / on['median']:9.1f}x")


def run_one(args, spark: str, mode: str, endpoint: str) -> dict:
    """One run, latestFirst `mode`, on a fresh copy of the stack's wiring (bucket -> SNS -> queue) with the
    backlog announced, in a fresh process; its line."""
    name = f"lf-{spark.replace('.', '')}-{mode}"
    path = wire_consumer(endpoint, name)
    upload_backlog(endpoint, path.queue_url, args.backlog)
    with benchkit.scratch(f"{name}-") as work:
        out, stderr = benchkit.run_worker(SPARKS[spark], __file__,
                                          [mode, "--work", str(work), "--seconds", str(args.seconds), "--trigger",
                                           args.trigger, "--max-files", str(args.max_files), "--backlog",
                                           str(args.backlog), "--endpoint", endpoint, "--bucket", path.bucket,
                                           "--queue", path.queue_url],
                                          f"latestFirst {mode}", timeout=2400)
        if args.verbose:
            print("\n".join(line for line in stderr.splitlines() if "s3-sqs" in line), flush=True)
    print(f"  Spark {spark:6s} latestFirst {mode:3s}: fresh files median {out['median']:6.1f} s, p95 "
          f"{out['p95']:6.1f} s; {out['batches']} batches of median {out['batch_s']:.1f} s, "
          f"{out['batches_before']} before the first fresh file (after {out['waited_s']:.0f} s for the "
          f"backlog to leave the queue); {out['rows']} rows, each once", flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
