#!/usr/bin/env python3
"""Benchmark: the time and bytes of one state snapshot as the number of tracked files grows.

Each planned batch adds --batch files and takes one incremental snapshot. At every checkpoint size
(default 10k and 100k tracked files) this prints the median of the next --samples snapshots, next to
a baseline measured in the same run on the same store: copying the whole database, which is what a
non-incremental snapshot would cost. With --s3 the store is an S3 bucket on a local moto server.
"""
from __future__ import annotations

import resource
import shutil
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.local_aws import local_aws  # noqa: E402
from s3sqs.core.files import S3File  # noqa: E402
from s3sqs.planning.batch_limits import Limit, batch_end  # noqa: E402
from s3sqs.state.snapshots import Snapshots, local_work_dir, open_index  # noqa: E402
from s3sqs.state.store import LocalStore, S3Store  # noqa: E402


FILL_CHUNK = 10_000


def fields(i: int) -> S3File:
    return S3File("landing-bucket", f"events/day=2026-11-{i % 28 + 1:02d}/part-{i:09d}.json.gz",
                  size=1000 + i % 5000, etag=f"{i:032x}", event_ms=1_790_000_000_000 + i,
                  event_name="ObjectCreated:Put")


def full_copy_cost(db, store, name: str) -> tuple[float, int]:
    """Baseline: flush and copy every file of the database into the store."""
    t0 = time.perf_counter()
    db.flush(True)
    tmp = local_work_dir()
    from rocksdict import Checkpoint
    Checkpoint(db).create_checkpoint(str(tmp / "ck"))
    size = 0
    for f in sorted((tmp / "ck").iterdir()):
        store.put_file(f, f"baseline-{name}/{f.name}")
        size += f.stat().st_size
    shutil.rmtree(tmp, ignore_errors=True)
    return time.perf_counter() - t0, size


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--at", default="10000,100000", help="tracked-file counts to measure at (default 10000,100000)")
    p.add_argument("--batch", type=int, default=100, help="new files per planned batch (default 100)")
    p.add_argument("--samples", type=int, default=9, help="snapshots measured at each point (default 9)")
    p.add_argument("--s3", action="store_true", help="snapshot to S3 on a local moto server instead of a local dir")
    args = p.parse_args(argv)
    points = sorted(int(x) for x in args.at.split(","))

    work = local_work_dir()
    try:
        with local_aws() if args.s3 else nullcontext() as server:
            if server:
                s3 = benchkit.aws_client("s3", server.endpoint_url)
                s3.create_bucket(Bucket="bench-state")
                store = S3Store("s3://bench-state/state", s3)
            else:
                store = LocalStore(str(work / "store"))
            measure(store, args, points)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def measure(store, args, points: list[int]) -> None:
    """At each point, the median snapshot of the next --samples batches against a full copy: a line each."""
    snaps = Snapshots(store)
    idx, db_work = open_index(snaps)
    n = 0
    print(f"store: {'S3 on moto' if args.s3 else 'local directory'}; {args.batch} new files per snapshot")
    print(f"{'tracked files':>14} {'plan ms':>8} {'snapshot ms':>12} {'snapshot KiB':>13} {'full copy ms':>13} "
          f"{'full copy KiB':>14} {'time ratio':>11} {'bytes ratio':>12} {'max RSS MiB':>12}")
    for point in points:
        n = fill(idx, snaps, db_work, n, point)
        times, sizes, plans = [], [], []
        for _ in range(args.samples):
            batch = [(f"k{i}", fields(i)) for i in range(n, n + args.batch)]
            idx.add_files(batch, {"new": len(batch)})
            t0 = time.perf_counter()  # what planning a batch costs: its end, its files read back, its record
            end = batch_end(n, idx.last_seq, Limit(args.batch, None))
            assert len(idx.records(n + 1, end)) == args.batch
            idx.record_batch(n, end)
            plans.append(time.perf_counter() - t0)
            s = snaps.save(idx.db, db_work)
            n += args.batch
            times.append(s.seconds)
            sizes.append(s.bytes_uploaded)
        base_t, base_b = full_copy_cost(idx.db, store, str(point))
        t, b = statistics.median(times), statistics.median(sizes)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{point:>14,} {statistics.median(plans) * 1000:>8.2f} {t * 1000:>12.1f} {b / 1024:>13.1f} {base_t * 1000:>13.1f} {base_b / 1024:>14.1f} "
              f"{t / base_t:>11.3f} {b / base_b:>12.4f} {rss:>12.0f}", flush=True)
    idx.db.close()


def fill(idx, snaps, db_work, n: int, point: int) -> int:
    """Tracked files from `n` up to `point`, in large writes: only the samples are timed."""
    last_report = time.monotonic()
    while n < point:
        step = min(FILL_CHUNK, point - n)
        batch = [(f"k{i}", fields(i)) for i in range(n, n + step)]
        idx.add_files(batch, {"new": len(batch)})
        idx.record_batch(n, n + step)
        n += step
        if n % (10 * FILL_CHUNK) == 0 or n == point:
            snaps.save(idx.db, db_work)
        if time.monotonic() - last_report > 10:
            print(f"  ... {n} files tracked", flush=True)
            last_report = time.monotonic()
    return n


if __name__ == "__main__":
    sys.exit(main())
