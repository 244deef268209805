#!/usr/bin/env python3
"""Benchmark: a run with one small file to ingest, whole process (spark-submit to exit).

The job: `app/job.py --until-drained`, reading one JSON file announced on a moto server's queue (S3 -> SNS
-> SQS, the stack's wiring). The peer, in the same run: Spark's own file source on the same file in a local
folder, `Trigger.AvailableNow`, into Parquet, by spark-submit of a few lines. Both use the same master and
settings. Runs alternate; the script prints each run's seconds, the job's phases (when each of its lines
came, from the process's start), and the median ratio job / file source with the load average. Every run's
sink is checked to hold the file's rows exactly once.

    python scripts/bench_startup.py --reps 3
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.committed import committed_rows  # noqa: E402
from devtools.local_aws import local_aws  # noqa: E402
from devtools.local_spark import LOCAL_MASTER, job_command, job_env, log_tail, wait_for  # noqa: E402

REGION = benchkit.REGION
ROWS = 100
SCHEMA = "id LONG, v STRING"
PEER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    src, out, ck, schema = sys.argv[1:5]
    spark = SparkSession.builder.appName("file-source").config("spark.log.level", "WARN").getOrCreate()
    q = (spark.readStream.format("json").schema(schema).load(src).writeStream.format("parquet")
         .option("checkpointLocation", ck).trigger(availableNow=True).start(out))
    q.awaitTermination()
    print("[peer] done", flush=True)
""")


def file_body(rows: int = ROWS) -> bytes:
    return "".join(json.dumps({"id": i, "v": f"value {i}"}) + "\n" for i in range(rows)).encode()


def timed(cmd: list[str], env: dict, log: Path) -> tuple[float, int, list[tuple[float, str]]]:
    """Run `cmd` to its end: (seconds, exit code, [(seconds since start, line)] of its bracketed lines)."""
    lines: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            out.write(line)
            if line.startswith("[") or "Running Spark version" in line:
                text = "[spark] SparkContext starts" if "Running Spark version" in line else line.strip()[:110]
                lines.append((time.perf_counter() - t0, text))
        rc = proc.wait()
    return time.perf_counter() - t0, rc, lines


def run_job(endpoint: str, work: Path, n: int, extra: list[str]) -> tuple[float, list]:
    s3, sqs, path = benchkit.wired(endpoint, f"startup-{n}")
    sqs.purge_queue(QueueUrl=path.queue_url)  # the bucket's test event: the run should find one file
    s3.put_object(Bucket=path.bucket, Key="in/one.json", Body=file_body())
    _wait_queued(sqs, path.queue_url)
    out, ck = work / f"job-out-{n}", work / f"job-ck-{n}"
    cmd = job_command("--queue-url", path.queue_url, "--format", "json", "--schema", SCHEMA,
                      "--checkpoint", str(ck), "--output", str(out), "--endpoint-url", endpoint,
                      "--region", REGION, "--until-drained", *extra, master=LOCAL_MASTER)
    seconds, rc, lines = timed(cmd, job_env(), work / f"job-{n}.log")
    _check(rc, out, f"job run {n}", work / f"job-{n}.log")
    return seconds, lines


def run_peer(work: Path, n: int) -> tuple[float, list]:
    src = work / f"peer-in-{n}"
    src.mkdir()
    (src / "one.json").write_bytes(file_body())
    script = work / "peer.py"
    script.write_text(PEER)
    out, ck = work / f"peer-out-{n}", work / f"peer-ck-{n}"
    base = job_command(master=LOCAL_MASTER)[:-1]  # spark-submit and the job's settings, without app/job.py
    cmd = [*base, str(script), str(src), str(out), str(ck), SCHEMA]
    seconds, rc, lines = timed(cmd, job_env(), work / f"peer-{n}.log")
    _check(rc, out, f"file-source run {n}", work / f"peer-{n}.log")
    return seconds, lines


def _wait_queued(sqs, url: str, timeout: float = 30) -> None:
    def queued() -> bool:
        a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
        return int(a["ApproximateNumberOfMessages"]) >= 1
    if not wait_for(queued, timeout, interval=0.1):
        raise SystemExit("the upload's notification never reached the queue")


def _check(rc: int, out: Path, what: str, log: Path) -> None:
    if rc != 0:
        raise SystemExit(f"{what} exited {rc}; the end of {log}:\n{log_tail(log)}")
    ids = sorted(r[0] for r in committed_rows(out, ["id"]))
    if ids != list(range(ROWS)):
        raise SystemExit(f"{what}: the sink holds {len(ids)} rows, not the file's {ROWS} once each; see {log}")


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    benchkit.add_reps(p, 3, "runs of each, alternating (default 3)")
    p.add_argument("--job-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for the job (repeatable), e.g. --job-arg=--idle-checks --job-arg=1")
    p.add_argument("--keep", help="keep every run's folders and logs here")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error("--reps must be at least 1")
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average at the start: {benchkit.load():.1f}", flush=True)
    job_s, peer_s = [], []
    with local_aws() as server:
        for n in range(args.reps):
            for side in benchkit.in_turn(n, ["job", "peer"]):
                if side == "job":
                    s, lines = run_job(server.endpoint_url, work, n, args.job_arg)
                    job_s.append(s)
                    print(f"run {n + 1} job: {s:.1f} s  (load {benchkit.load():.1f})", flush=True)
                else:
                    s, lines = run_peer(work, n)
                    peer_s.append(s)
                    print(f"run {n + 1} file source: {s:.1f} s  (load {benchkit.load():.1f})", flush=True)
                for at, line in lines:
                    print(f"    {at:6.1f} s  {line}")
    ratios = [j / f for j, f in zip(job_s, peer_s)]
    print(f"job {statistics.median(job_s):.1f} s, file source {statistics.median(peer_s):.1f} s (medians); "
          f"job / file source per run: {benchkit.ratios_text(ratios)}; median "
          f"{statistics.median(ratios):.2f}x; load average at the end {benchkit.load():.1f}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
