#!/usr/bin/env python3
"""Benchmark: one big CSV file (2 GB by default), this source against Spark's own file source, with memory.

With --multiline each row's `user` value is quoted and holds a line break, and both read it with
multiLine (neither splits such a file across tasks). This source writes as the job does without a
transform (its read tasks write the files: bench_read.job_writer): Parquet files with Spark's file sink
log (--sink parquet, the default), Parquet files through Spark's file sink (--sink parquet-spark, as with a
transform), or a Delta table (--sink delta); Spark's file source writes Parquet files with its file sink.

The file is made in a temporary folder and deleted afterwards. For each Spark (PySpark 4.0.2 in
.venv-spark40, 4.3 in .venv) the two read it in turn, in fresh processes, --reps times each, in alternating
order, into a Parquet sink; a run is timed from the query's start to the moment its sink has committed
every row. Meanwhile the peak resident memory (VmHWM) of each process the run starts is sampled from /proc:
the JVM, and each of Spark's Python workers (where this source reads). It prints both times, the ratio
(>1: this source is faster), the peak memory of the JVM and of the largest Python worker, and the load
average before and after each run: the figures mean little on a busy machine.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from bench_read import SCHEMA, SPARKS, job_writer  # noqa: E402  (the same rows and Sparks as bench_read)
from devtools.local_aws import local_aws  # noqa: E402
from devtools.local_spark import sparks_of  # noqa: E402

ROWS_PER_CHUNK = 500_000


def make_csv(path: Path, target_bytes: int, multiline: bool = False) -> int:
    """A CSV file with a header of about `target_bytes`; returns its rows. With `multiline`, every row's
    `user` value holds a line break (and so is quoted)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    rows, first = 0, True
    with pa.OSFile(str(path), "wb") as out:
        while out.tell() < target_bytes:
            n = ROWS_PER_CHUNK
            ids = pa.array(range(rows, rows + n), pa.int64())
            second = "\nsecond line" if multiline else ""
            t = pa.table({"id": ids, "user": pa.array([f"user-{i % 9973}{second}" for i in range(n)]),
                          "amount": pa.array([(i % 10000) / 7 for i in range(n)]),
                          "country": pa.array([("de", "fr", "us", "jp", "br")[i % 5] for i in range(n)]),
                          "ts": pa.array([f"2026-11-{1 + i % 28:02d}T12:00:00Z" for i in range(n)])})
            pacsv.write_csv(t, out, pacsv.WriteOptions(include_header=first))
            first = False
            rows += n
    return rows


# ---------------------------------------------------------------------------------------- worker

def worker(kind: str, data: Path, out: Path, expected: int, endpoint: str, queue_url: str,
           multiline: bool, sink: str = "parquet") -> dict:
    from devtools.local_spark import wait_for_rows
    spark = benchkit.spark_builder(f"bench-bigfile-{kind}", os.environ.get("BENCH_LOG_LEVEL", "ERROR")).getOrCreate()
    if kind == "native":
        df = spark.readStream.format("csv").schema(SCHEMA).option("header", "true") \
            .option("multiLine", str(multiline).lower()).load(str(data))
    else:
        benchkit.register_source(spark)
        opts = {"fileFormat": "csv", "header": "true", "multiLine": str(multiline).lower(), "queueUrl": queue_url,
                "endpointUrl": endpoint, "queueRegion": "us-east-1", "stateLocation": str(out / "state"),
                "basePath": f"file://{data}/",
                "includeExistingFiles": "true", "maxFilesPerTrigger": "-1",
                "minPartitions": str(spark.sparkContext.defaultParallelism)}
        df = spark.readStream.format("s3-sqs").schema(SCHEMA).options(**opts).load()
        benchkit.warm_python_workers(spark)
    t0 = time.perf_counter()
    rows_of = None
    if kind == "s3sqs":
        writer, rows_of = job_writer(spark, df, opts, out, sink)
    else:
        writer = df.writeStream.format("parquet").option("path", str(out / "table"))
    q = writer.option("checkpointLocation", str(out / "ck")).start()
    rows, batches = wait_for_rows(q, expected, kind, poll=0.1, rows_of=rows_of)
    seconds = time.perf_counter() - t0
    q.stop()
    spark.stop()
    return {"seconds": seconds, "rows": rows, "batches": batches}


# ------------------------------------------------------------------------------------- memory

def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except OSError:  # the process ended between the listing and the read
        return {}


def _kib(value: str | None) -> int:
    return int(value.split()[0]) if value else 0


class PeakMemory:
    """Samples the peak resident memory (VmHWM) of every descendant of a process, by kind."""

    def __init__(self, root: int, interval: float = 0.2):
        self.root, self.interval = root, interval
        self.peaks: dict[int, tuple[str, int]] = {}  # pid -> (kind, KiB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                parents[int(entry)] = int(_status(int(entry)).get("PPid", "0") or 0)
        for pid in parents:
            p, depth = pid, 0
            while p and p != self.root and depth < 20:
                p, depth = parents.get(p, 0), depth + 1
            if p != self.root or pid == self.root:
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            # Spark forks its Python workers from `python -m pyspark.daemon`: they keep its command line.
            kind = "jvm" if "java" in cmd.split(" ", 1)[0] else \
                "python-worker" if ("pyspark.daemon" in cmd or "pyspark.worker" in cmd) else "other"
            hwm = _kib(_status(pid).get("VmHWM"))
            if hwm:
                self.peaks[pid] = (kind, max(hwm, self.peaks.get(pid, ("", 0))[1]))

    def largest(self, kind: str) -> int:
        return max((k for kd, k in self.peaks.values() if kd == kind), default=0) * 1024

    def count(self, kind: str) -> int:
        return sum(1 for kd, _ in self.peaks.values() if kd == kind)


# ------------------------------------------------------------------------------------ orchestrator

def run_one(python: Path, kind: str, data: Path, expected: int, endpoint: str, queue: str,
            multiline: bool, sink: str) -> dict:
    load_before = benchkit.load()
    with benchkit.scratch(f"bench-bigfile-{kind}-") as out:
        proc = subprocess.Popen([str(python), __file__, "--worker", kind, "--data", str(data), "--out", str(out),
                                 "--expected", str(expected), "--endpoint", endpoint, "--queue", queue,
                                 "--sink", sink] + (["--multiline"] if multiline else []),
                                env=benchkit.spark_env(python), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        with PeakMemory(proc.pid) as mem:
            stdout, stderr = proc.communicate(timeout=3600)
        r = benchkit.worker_result(proc.returncode, stdout, stderr, kind)
        r.update(jvm=mem.largest("jvm"), worker=mem.largest("python-worker"), workers=mem.count("python-worker"),
                 load=(load_before, benchkit.load()))
        return r


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--gb", type=float, default=2.0, help="size of the CSV file in GB (default 2)")
    p.add_argument("--spark", default="4.0.2", help="which PySparks, in order (default 4.0.2; 4.0.2,4.3 for both)")
    benchkit.add_reps(p, 1)
    p.add_argument("--multiline", action="store_true",
                   help="a value with a line break in every row, read with multiLine")
    p.add_argument("--sink", choices=["parquet", "parquet-spark", "delta"], default="parquet",
                   help="this source's sink, as the job writes it without a transform (parquet, the default, and "
                        "delta) or with one (parquet-spark); Spark's file source: its Parquet file sink")
    benchkit.add_worker_flags(p, ["native", "s3sqs"], "--data", "--out", "--expected", "--endpoint", "--queue")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, Path(args.data), Path(args.out), int(args.expected), args.endpoint,
                                args.queue, args.multiline, args.sink)))
        return 0
    sparks = sparks_of(p, args.spark)
    if args.reps < 1 or args.gb <= 0:
        p.error("--reps must be at least 1 and --gb positive")
    with local_aws() as server, benchkit.scratch("bench-bigfile-data-") as data:
        return compare(args, sparks, server.endpoint_url, data)


def compare(args, sparks: list[str], endpoint: str, data: Path) -> int:
    """Both readers on one big file, each Spark, --reps times in alternating order: each run's line, then the table."""
    queue = benchkit.aws_client("sqs", endpoint).create_queue(QueueName="bench-bigfile")["QueueUrl"]
    expected = make_csv(data / "big.csv", int(args.gb * 1e9), args.multiline)
    size = (data / "big.csv").stat().st_size
    print(f"{benchkit.header()}; one CSV "
          f"file of {size / 1e9:.2f} GB, {expected:,} rows{' (multiLine)' if args.multiline else ''}; "
          f"{args.reps} runs each, alternating; into a {args.sink} sink; times from "
          "query start to the last row committed; peak RSS (VmHWM) sampled every 0.2 s", flush=True)
    results = []
    for spark in sparks:
        def run(_, kind: str) -> dict:
            r = run_one(SPARKS[spark], kind, data, expected, endpoint, queue, args.multiline, args.sink)
            print(f"  Spark {spark:6s} {kind:7s} {r['seconds']:6.1f} s  JVM peak {r['jvm'] / 2**20:6.0f} MiB, "
                  f"largest Python worker peak {r['worker'] / 2**20:5.0f} MiB ({r['workers']} workers); "
                  f"load {r['load'][0]:.1f} -> {r['load'][1]:.1f}", flush=True)
            return r
        results.append((spark, benchkit.paired(args.reps, run)))
    print(f"\n{'Spark':6s} {'native s':>9s} {'s3-sqs s':>9s} {'ratio':>6s} {'JVM MiB n/s':>13s} "
          f"{'worker MiB n/s':>15s}  (medians; ratio >1: this source is faster)")
    for spark, runs in results:
        n = statistics.median(r["seconds"] for r in runs["native"])
        s = statistics.median(r["seconds"] for r in runs["s3sqs"])
        mib = {k: (max(r["jvm"] for r in v) / 2**20, max(r["worker"] for r in v) / 2**20) for k, v in runs.items()}
        print(f"{spark:6s} {n:9.1f} {s:9.1f} {n / s:6.2f} {mib['native'][0]:6.0f}/{mib['s3sqs'][0]:<6.0f} "
              f"{mib['native'][1]:7.0f}/{mib['s3sqs'][1]:<7.0f}")
    benchkit.print_end_load()
    return 0


if __name__ == "__main__":
    sys.exit(main())
