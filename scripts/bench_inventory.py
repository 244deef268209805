#!/usr/bin/env python3
"""Benchmark: backfill from an S3 Inventory report against backfill by listing, on a local moto server.

1. The same --compare keys (default 3,000) put in a bucket, then recorded once by listing the prefix
   (includeExistingFiles) and once from an inventory report of them: keys/s of each and the ratio, in
   the same run.
2. A report of --rows keys (default 1,000,000; gzipped CSV in files of 100,000 rows, as S3 writes them)
   recorded into a fresh state: keys/s, and the process's peak memory after a tenth of the rows and
   after all of them (flat: the report is streamed in chunks).
The state is local (a temporary folder); the report and the listing are read from moto over HTTP.
"""
from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.inventory_report import csv_body, write_report  # noqa: E402
from devtools.local_aws import local_aws  # noqa: E402
from s3sqs.config.options import parse_options  # noqa: E402
from s3sqs.planning.controller import Controller  # noqa: E402

ROWS_PER_FILE = 100_000
MODIFIED = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 86400))


def rows(bucket: str, start: int, n: int) -> list[dict]:
    return [{"Bucket": bucket, "Key": f"data/day={i % 30}/part-{i:09d}.json.gz", "VersionId": "", "IsLatest": "true",
             "IsDeleteMarker": "false", "Size": 1000 + i % 5000, "LastModifiedDate": MODIFIED, "ETag": f"{i:032x}"}
            for i in range(start, start + n)]


def controller(endpoint: str, bucket: str, state: Path, **extra) -> Controller:
    o = {"fileFormat": "json", "queueUrl": f"{endpoint}/123456789012/unused", "stateLocation": str(state),
         "endpointUrl": endpoint, "queueRegion": "us-east-1", "basePath": f"s3://{bucket}/data/",
         "maxFileAge": "30d"}
    d = Controller(parse_options({**o, **extra}))
    d.open()
    return d


def timed(d: Controller) -> tuple[int, float, float]:
    """Keys recorded, seconds, and how far the process's memory rose above where it was (MiB, sampled)."""
    before, peak, done = rss_mib(), [0.0], threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_mib())
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    d.backfill.run_now()
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    n = d.index.last_seq
    d.close()
    return n, seconds, max(0.0, peak[0] - before)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the big report (default 1,000,000)")
    p.add_argument("--compare", type=int, default=3_000, help="keys listed and inventoried alike (default 3,000)")
    args = p.parse_args(argv)
    print(f"load average at start: {benchkit.load():.2f}", flush=True)
    with local_aws() as server, tempfile.TemporaryDirectory() as tmp:
        s3 = benchkit.aws_client("s3", server.endpoint_url)
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        s3.create_bucket(Bucket=bucket)

        # 1. the same keys, listed and inventoried
        same = rows(bucket, 0, args.compare)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda r: s3.put_object(Bucket=bucket, Key=r["Key"], Body=b"{}"), same))
        listed, t_list, _ = timed(controller(server.endpoint_url, bucket, Path(tmp, "listing"),
                                          includeExistingFiles="true"))
        manifest = write_report(s3, bucket, "CSV", [csv_body(same)])
        inventoried, t_inv, _ = timed(controller(server.endpoint_url, bucket, Path(tmp, "same"),
                                              backfillFromInventory=manifest))
        assert listed == inventoried == args.compare, (listed, inventoried)
        print(f"{args.compare:,} keys: listing {listed / t_list:,.0f} keys/s, inventory {inventoried / t_inv:,.0f} "
              f"keys/s: the inventory {t_list / t_inv:.1f}x faster", flush=True)

        # 2. a big report, a tenth then all of it
        for n in (args.rows // 10, args.rows):
            bodies = [csv_body(rows(bucket, s, min(ROWS_PER_FILE, n - s))) for s in range(0, n, ROWS_PER_FILE)]
            manifest = write_report(s3, bucket, "CSV", bodies)
            del bodies
            got, seconds, rise = timed(controller(server.endpoint_url, bucket, Path(tmp, f"big-{n}"),
                                                  backfillFromInventory=manifest))
            assert got == n, (got, n)
            print(f"{n:,} inventory rows in {-(-n // ROWS_PER_FILE)} files: {n / seconds:,.0f} keys/s recorded "
                  f"({seconds:.1f} s); memory rose {rise:,.0f} MiB while recording", flush=True)
    print(f"load average at end: {benchkit.load():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
