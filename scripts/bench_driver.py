#!/usr/bin/env python3
"""Benchmark: the source's own cost per file on the driver, with an SQS stand-in that is not the bottleneck.

moto serves about a hundred requests a second here, so it hides what the driver itself costs. This script
gives the source an in-process stand-in for SQS (a queue of S3 event messages held in memory, answering at
once) and drives it the way Spark does: `latestOffset`, the batch's files, `commit`, again and again, while
the intake receives, parses, decides, records and deletes in the background and every plan snapshots the
index to a local state location. Nothing is read from S3: the files are only announced.

It prints the driver's files/s, and beside it a peer measured in the same run on the same messages: a bare
consumer of the stand-in that only receives, parses the bodies with the source's own parser and deletes (no
state). At every checkpoint of tracked files it prints the rate since the last one, the median planning and
snapshot time per batch, the process's memory and the state's size on disk, to show whether they stay flat
as the index grows.

    python scripts/bench_driver.py --files 1000000 --max-files 10000
"""
from __future__ import annotations

import functools
import json
import logging
import os
import statistics
import sys
import threading
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402

sys.path.insert(0, str(benchkit.ROOT / "app"))
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/bench-driver"


def event_body(i: int, t_ms: int, bucket: str = "bench-landing", key: str | None = None, size: int | None = None) -> str:
    """An S3 ObjectCreated notification for one object, as S3 sends it (raw delivery, as the stack sets it).
    Filled into a template, as json.dumps would write it: the stand-in's own cost is not the driver's."""
    return _BODY.format(stamp=_stamp(t_ms), bucket=json.dumps(bucket),
                        key=json.dumps(key or f"data/day={i % 30:02d}/part-{i:09d}.json"),
                        size=1024 + i % 4096 if size is None else size, etag=f"{i:032x}", sequencer=f"{i:016X}")


_BODY = ('{{"Records": [{{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1", '
         '"eventTime": "{stamp}", "eventName": "ObjectCreated:Put", "s3": {{"bucket": {{"name": {bucket}}}, '
         '"object": {{"key": {key}, "size": {size}, "eTag": "{etag}", "sequencer": "{sequencer}"}}}}}}]}}')


@functools.lru_cache(maxsize=4)
def _stamp(t_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_ms / 1000)) + f".{t_ms % 1000:03d}Z"


class InProcessSQS:
    """The calls the source makes of a boto3 SQS client, answered from memory. Messages are made as they are
    received, so a run of millions holds only those in flight."""

    def __init__(self, total: int):
        self.total, self.next, self.deleted = total, 0, 0
        self.in_flight: dict[str, int] = {}
        self.lock = threading.Lock()
        self.t_ms = int(time.time() * 1000)

    def receive_message(self, QueueUrl, MaxNumberOfMessages=10, WaitTimeSeconds=0, **_):
        with self.lock:
            n = min(MaxNumberOfMessages, self.total - self.next)
            ids = range(self.next, self.next + n)
            self.next += n
            for i in ids:
                self.in_flight[f"r{i}"] = i
        if not n and WaitTimeSeconds:
            time.sleep(min(WaitTimeSeconds, 0.05))  # an empty long poll, short: the run ends sooner
        return {"Messages": [{"MessageId": f"m{i}", "ReceiptHandle": f"r{i}", "Body": event_body(i, self.t_ms),
                              "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(self.t_ms)}}
                             for i in ids]}

    def delete_message_batch(self, QueueUrl, Entries):
        with self.lock:
            for e in Entries:
                self.in_flight.pop(e["ReceiptHandle"])
            self.deleted += len(Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def change_message_visibility_batch(self, QueueUrl, Entries):
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def get_queue_attributes(self, QueueUrl, AttributeNames):
        with self.lock:
            waiting, flight = self.total - self.next, len(self.in_flight)
        return {"Attributes": {"ApproximateNumberOfMessages": str(waiting),
                               "ApproximateNumberOfMessagesNotVisible": str(flight),
                               "ApproximateNumberOfMessagesDelayed": "0"}}


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def dir_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / (1 << 20)


def bare_consumer(total: int) -> tuple[float, float]:
    """The peer: receive, parse with the source's parser, delete; no state. Returns files/s and CPU µs/file."""
    from s3sqs.planning.events import parse_body
    sqs = InProcessSQS(total)
    t0, cpu0 = time.perf_counter(), cpu_seconds()
    while True:
        msgs = sqs.receive_message(QUEUE_URL, 10)["Messages"]
        if not msgs:
            break
        for m in msgs:
            parse_body(m["Body"])
        sqs.delete_message_batch(QUEUE_URL, [{"Id": str(j), "ReceiptHandle": m["ReceiptHandle"]}
                                             for j, m in enumerate(msgs)])
    return total / (time.perf_counter() - t0), (cpu_seconds() - cpu0) / total * 1e6


def cpu_seconds() -> float:
    """CPU time of this process, every thread: less sensitive than elapsed time to what else runs here."""
    return time.process_time()


def driver(total: int, max_files: int, checkpoints: list[int], work: Path) -> tuple[float, float]:
    """The source's driver side against the stand-in, called as Spark calls it. Returns files/s and the CPU
    microseconds it spent per file."""
    from s3sqs.config.options import parse_options
    from s3sqs.core.counters import Stat
    from s3sqs.planning import controller as controller_module
    from s3sqs.planning.batch_limits import Limit

    sqs = InProcessSQS(total)
    controller_module.sqs_client = lambda *_: sqs  # the stand-in instead of boto3's client
    opts = parse_options({"fileFormat": "json", "queueUrl": QUEUE_URL, "stateLocation": str(work / "state"),
                          "maxFilesPerTrigger": str(max_files), "sqs.longPollingWaitTimeSeconds": "1"})
    d = controller_module.Controller(opts)
    limit = Limit(max_files, None)
    start, marks = d.initial_offset(), deque(sorted(checkpoints))
    t0 = last_t = time.perf_counter()
    cpu0 = cpu_seconds()
    last_n, plans = 0, []
    print(f"  {'tracked':>10s} {'files/s':>9s} {'plan ms':>8s} {'snapshots':>10s} {'ms each':>8s} {'RSS MiB':>8s} "
          f"{'state MiB':>10s}", flush=True)
    snap_n = snap_ms = 0
    try:
        while start < total:
            t = time.perf_counter()
            end = d.latest_offset(start, limit)
            if end == start:  # nothing new: Spark waits for its next trigger; here a moment
                time.sleep(0.005)
                continue
            plans.append((time.perf_counter() - t) * 1000)
            d.files_between(start, end)
            d.commit(end)
            start = end
            while marks and start >= marks[0]:
                now, st = time.perf_counter(), d.index.stats
                n, ms = st.get(Stat.SNAPSHOTS, 0) - snap_n, st.get(Stat.SNAPSHOT_MS, 0) - snap_ms
                print(f"  {marks.popleft():>10,d} {(start - last_n) / (now - last_t):>9,.0f} "
                      f"{statistics.median(plans or [0]):>8.1f} {n:>10,d} {ms / max(n, 1):>8.1f} {rss_mib():>8.0f} "
                      f"{dir_mib(work / 'state'):>10.1f}", flush=True)
                last_n, last_t, plans = start, now, []
                snap_n, snap_ms = st.get(Stat.SNAPSHOTS, 0), st.get(Stat.SNAPSHOT_MS, 0)
        rate = total / (time.perf_counter() - t0)
        cpu_us = (cpu_seconds() - cpu0) / total * 1e6
    finally:
        d.close()
    if sqs.deleted != total:
        raise SystemExit(f"{sqs.deleted} of {total} messages were deleted: the source lost some")
    return rate, cpu_us


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--files", type=int, default=1_000_000, help="files announced (default 1,000,000)")
    p.add_argument("--max-files", type=int, default=10_000, help="maxFilesPerTrigger (default 10,000)")
    p.add_argument("--checkpoints", type=int, default=10, help="progress lines (default 10)")
    args = p.parse_args(argv)
    if args.files < 1000 or args.max_files < 1 or args.checkpoints < 1:
        p.error("--files must be at least 1000, --max-files and --checkpoints at least 1")
    logging.basicConfig(level=logging.WARNING)
    with benchkit.scratch("bench-driver-") as work:
        print(f"{benchkit.header()}; "
              f"{args.files:,d} files announced, maxFilesPerTrigger {args.max_files:,d}, state on local disk",
              flush=True)
        peer, peer_cpu = bare_consumer(min(args.files, 200_000))
        print(f"peer, a bare consumer of the stand-in (receive, parse, delete): {peer:,.0f} files/s, "
              f"{peer_cpu:.0f} µs of CPU a file", flush=True)
        step = args.files // args.checkpoints
        rate, cpu = driver(args.files, args.max_files, [step * (i + 1) for i in range(args.checkpoints)], work)
        print(f"\nthe source's driver: {rate:,.0f} files/s ({rate / peer:.2f}x the bare consumer's rate), {cpu:.0f} µs "
              f"of CPU a file ({cpu / peer_cpu:.1f}x the bare consumer's); at {1e6 / cpu:,.0f} files per CPU second; "
              f"load average at the end: {benchkit.load():.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
