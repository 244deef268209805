#!/usr/bin/env python3
"""Benchmark: the job's ingest rate against the ceiling of the same moto server, in the same run.

Locally, moto's SQS and S3 speed bounds everything, so an absolute files/s figure says little. This
script uploads the same files to two fresh bucket -> queue pairs, then:
- ceiling: a bare boto3 consumer, as parallel as the source (receive 10 at a time, GET every object,
  parse it with pyarrow, delete the messages), with no Spark and no state;
- connector: app/job.py --until-drained, timed from the source's start (it opens its state, then
  receives) to its last commit.
It prints both times, their ratio (1.0 = the connector is as fast as moto allows), and what each paid in
SQS calls (receive + delete + visibility) per file; --reps runs alternate their order. For each run it
prints where the connector's time went: receiving until its first plan, then each batch (its planning
included). It also prints the CPU time moto's process spent serving each side: moto's Python serves one
request at a time, so no consumer making the same requests can take less time than that.
"""
from __future__ import annotations

import io
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
import pyarrow.json as pajson  # noqa: E402

from devtools.local_aws import local_aws, work_dir  # noqa: E402
from devtools.local_spark import job_command, job_env, log_tail  # noqa: E402
from devtools.committed import committed_rows  # noqa: E402
from s3sqs.state.snapshots import Snapshots, read_status  # noqa: E402
from s3sqs.state.store import LocalStore  # noqa: E402

ROOT, REGION = benchkit.ROOT, benchkit.REGION


def wire(endpoint: str, name: str):
    """The stack's own wiring (bucket -> SNS -> queue), named after `name`."""
    s3, sqs, path = benchkit.wired(endpoint, name)
    sqs.purge_queue(QueueUrl=path.queue_url)  # drop any test event so both runs see the same messages
    return s3, sqs, path.queue_url, path.bucket


def upload(s3, bucket: str, files: int, rows: int) -> None:
    def put(i):
        body = "".join(json.dumps({"id": i * rows + r, "v": f"value {r}"}) + "\n" for r in range(rows))
        s3.put_object(Bucket=bucket, Key=f"bench/part-{i:05d}.json", Body=body.encode())
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(files)))


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_cpu_of(pid: int, fn, *args):
    """fn(*args), and the CPU seconds process `pid` spent while it ran."""
    before = cpu_seconds(pid)
    result = fn(*args)
    return result, cpu_seconds(pid) - before


def ceiling(s3, sqs, queue_url: str, files: int, concurrency: int) -> tuple[float, int, int]:
    """Receive, read and delete everything with plain boto3; returns (seconds, rows, SQS calls)."""
    t0 = time.perf_counter()
    done, rows, calls = 0, 0, 0

    def receive(_):
        return sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                   VisibilityTimeout=60).get("Messages", [])

    def read(msg):
        rec = json.loads(msg["Body"])["Records"][0]["s3"]
        from urllib.parse import unquote_plus
        body = s3.get_object(Bucket=rec["bucket"]["name"], Key=unquote_plus(rec["object"]["key"]))["Body"].read()
        return pajson.read_json(io.BytesIO(body)).num_rows

    with ThreadPoolExecutor(concurrency) as pool:
        while done < files:
            polls = min(concurrency, -(-(files - done) // 10))
            msgs = [m for batch in pool.map(receive, range(polls)) for m in batch]
            msgs = list({m["MessageId"]: m for m in msgs}.values())
            rows += sum(pool.map(read, msgs))
            chunks = [msgs[i:i + 10] for i in range(0, len(msgs), 10)]
            list(pool.map(lambda c: sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(j), "ReceiptHandle": m["ReceiptHandle"]} for j, m in enumerate(c)]), chunks))
            done += len(msgs)
            calls += polls + len(chunks)
    return time.perf_counter() - t0, rows, calls


def connector(endpoint: str, queue_url: str, work: Path, max_files: int) -> tuple[float, float, int, int]:
    """Run the job until drained; returns (batch window seconds, wall seconds, rows, SQS calls)."""
    cmd = job_command(
        "--queue-url", queue_url, "--format", "json", "--schema", "id LONG, v STRING",
        "--checkpoint", str(work / "ck"), "--output", str(work / "out"), "--endpoint-url", endpoint,
        "--region", REGION, *(["--verbose"] if os.environ.get("BENCH_VERBOSE") else []), "--until-drained", "--idle-checks", "2", "--trigger-interval", "0 seconds",
        "--option", f"maxFilesPerTrigger={max_files}")
    t0 = time.perf_counter()
    with open(work / "job.log", "wb") as log:
        rc = subprocess.run(cmd, env=job_env(), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    wall = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"job failed ({rc}); the end of {work / 'job.log'}:\n{log_tail(work / 'job.log')}")
    last = max(p.stat().st_mtime for p in (work / "ck" / "commits").iterdir() if p.name.isdigit())
    stats = read_status(Snapshots(LocalStore(str(work / "ck" / "source-state"))))["stats"]
    calls = sum(n for k, n in stats.items() if k.startswith("sqs_calls_") and k != "sqs_calls_GetQueueAttributes")
    opened = logged_at(log_lines(work / "job.log"), "s3-sqs source on", work / "job.log")
    return last - opened, wall, len(committed_rows(work / "out", ["id"])), calls


def log_lines(log: Path) -> list[str]:
    return log.read_text(errors="replace").splitlines()


def logged_at(lines: list[str], text: str, log: Path) -> float:
    """When the job first logged a line holding `text` (the source's log lines carry a time)."""
    for line in lines:
        if text in line and line[:2] == "20":
            stamp = line[:23]  # "2026-11-21 22:30:01,123", the job's local time
            return time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + int(stamp[20:23]) / 1000
    raise SystemExit(f"no {text!r} line in {log}")


BATCH_LINE = re.compile(r"^\[job\] batch \d+: .*? in ([\d.]+) s .*?; planning ([\d,]+) ms")


def where_time_went(log: Path) -> str:
    """Receiving until the first plan, then each batch's time with its planning, from the job's log."""
    lines = log_lines(log)
    first_plan = logged_at(lines, "s3-sqs: planned offsets", log) - logged_at(lines, "s3-sqs source on", log)
    batches = [m.groups() for m in map(BATCH_LINE.match, lines) if m]
    return (f"receiving until the first plan {first_plan:.1f} s; batches "
            + ", ".join(f"{float(s):.1f} s ({int(ms.replace(',', '')) / 1000:.1f} planning)" for s, ms in batches))


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--files", type=int, default=300, help="files to ingest (default 300)")
    p.add_argument("--rows", type=int, default=100, help="rows per file (default 100)")
    p.add_argument("--max-files-per-trigger", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=8, help="threads for the boto3 ceiling (default 8)")
    benchkit.add_reps(p, 3, "runs of each, alternating (default 3)")
    p.add_argument("--keep", help="keep the job's checkpoints, tables and logs in this folder")
    args = p.parse_args(argv)
    if args.files < 1 or args.rows < 1 or args.reps < 1:
        p.error("--files, --rows and --reps must be at least 1")
    with local_aws() as server, work_dir(args.keep) as root:
        print(f"{benchkit.header()}; moto at "
              f"{server.endpoint_url}; {args.files} JSON files x {args.rows} rows", flush=True)
        results = []
        for rep in range(args.reps):
            work = root / f"rep-{rep}"
            work.mkdir(parents=True, exist_ok=True)
            s3a, sqs_a, qa, bucket_a = wire(server.endpoint_url, f"bench-ceiling-{rep}")
            s3b, _, qb, bucket_b = wire(server.endpoint_url, f"bench-connector-{rep}")
            upload(s3a, bucket_a, args.files, args.rows)
            upload(s3b, bucket_b, args.files, args.rows)
            first_ceiling = rep % 2 == 0
            moto = server.process.pid
            if first_ceiling:
                (c_secs, c_rows, c_calls), c_moto = with_cpu_of(moto, ceiling, s3a, sqs_a, qa, args.files,
                                                                args.concurrency)
            (window, wall, rows, calls), j_moto = with_cpu_of(moto, connector, server.endpoint_url, qb, work,
                                                              args.max_files_per_trigger)
            if not first_ceiling:
                (c_secs, c_rows, c_calls), c_moto = with_cpu_of(moto, ceiling, s3a, sqs_a, qa, args.files,
                                                                args.concurrency)
            if rows != args.files * args.rows or c_rows != rows:
                raise SystemExit(f"row counts differ: ceiling {c_rows}, connector {rows}, "
                                 f"expected {args.files * args.rows}")
            results.append((c_secs, window, wall, c_calls, calls, c_moto, j_moto))
            print(f"  run {rep + 1}: ceiling {c_secs:5.1f} s, connector {window:5.1f} s (job {wall:.0f} s with "
                  f"Spark start-up); time ratio {window / c_secs:.2f}\n"
                  f"         the connector's window: {where_time_went(work / 'job.log')}\n"
                  f"         moto's CPU: {c_moto:.1f} s serving the ceiling ({c_moto / c_secs:.0%} of its time), "
                  f"{j_moto:.1f} s serving the whole job", flush=True)
        c_secs = statistics.median(r[0] for r in results)
        window = statistics.median(r[1] for r in results)
        ratios = sorted(r[1] / r[0] for r in results)
        print(f"\n{'':12s} {'seconds':>8s} {'files/s':>8s} {'SQS calls/file':>15s}")
        print(f"{'ceiling':12s} {c_secs:8.1f} {args.files / c_secs:8.1f} "
              f"{statistics.median(r[3] for r in results) / args.files:15.3f}")
        print(f"{'connector':12s} {window:8.1f} {args.files / window:8.1f} "
              f"{statistics.median(r[4] for r in results) / args.files:15.3f}")
        print(f"connector time / ceiling time: {statistics.median(ratios):.2f} (runs: "
              f"{benchkit.ratios_text(ratios)}); load average now {benchkit.load():.1f}")
        floor = statistics.median(r[5] / r[0] for r in results)
        print(f"moto's CPU for the ceiling's requests / ceiling time: {floor:.2f}: a consumer making the same "
              f"requests (the job makes them, and its start-up's) cannot take less time than that here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
