#!/usr/bin/env python3
"""Benchmark: the S3 requests and the time of a source cleaner run, on a local moto server, with the cleaner
of this checkout and with that of another git ref (default `main`), on the same history:

200 commit markers of 50 files of one consumer (retention 1d, delete): markers 1-150 committed 40 days ago
and long cleaned (the journal says so), marker 151 committed 2 days ago with 10 files still in the source
(due) and 40 cleaned, markers 152-200 committed an hour ago (2,450 files in their retention). Three runs
that apply are measured: the first, the next one with nothing new, and one after a new commit of 50 files.
Every HTTP request the cleaner's client sends is counted (a botocore `before-send` hook), by operation.

    PYTHONPATH=app:. .venv/bin/python scripts/bench_clean.py [--before-ref main]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools.local_aws import local_aws  # noqa: E402

ROOT = benchkit.ROOT
DAY = 86_400_000
MARKERS, PER_MARKER, SETTLED_MARKERS, DUE = 200, 50, 150, 10


def history(s3, endpoint: str) -> dict:
    """The buckets, objects, markers and journal described above; returns where they are."""
    from s3sqs.cleaning import journal
    from s3sqs.core.files import S3File
    from s3sqs.state import markers
    from s3sqs.state.store import S3Store

    tag = uuid.uuid4().hex[:8]
    src, ck = f"bench-src-{tag}", f"bench-ck-{tag}"
    for b in (src, ck):
        s3.create_bucket(Bucket=b)
    now = int(time.time() * 1000)
    etag = '"d41d8cd98f00b204e9800998ecf8427e"'  # an empty object's
    present = [f"in/{m:03d}-{i:02d}.csv" for m in range(SETTLED_MARKERS, MARKERS) for i in range(PER_MARKER)
               if m > SETTLED_MARKERS or i < DUE]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.put_object(Bucket=src, Key=k, Body=b""), present))
    store = S3Store(f"s3://{ck}/checkpoints/ingest/source-state", s3)
    cleaned = []
    for m in range(MARKERS):
        at = now - (40 * DAY if m < SETTLED_MARKERS else 2 * DAY if m == SETTLED_MARKERS else 3600_000)
        keys = [f"in/{m:03d}-{i:02d}.csv" for i in range(PER_MARKER)]
        files = [S3File(src, k, 0, etag.strip('"'), seq=m * PER_MARKER + i + 1) for i, k in enumerate(keys)]
        markers.write(store, markers.marker_of(m * PER_MARKER + 1, (m + 1) * PER_MARKER, at, files))
        if m < SETTLED_MARKERS or m == SETTLED_MARKERS:
            cleaned += [journal.Cleaned(src, k, etag.strip('"'), 0, "deleted", at + DAY)
                        for k in keys if m < SETTLED_MARKERS or k not in present]
    jstore = S3Store(f"s3://{ck}/source-cleaning", s3)
    for c in range(0, len(cleaned), 100):
        journal.write(jstore, f"{now - 3 * DAY:013d}-history", c // 100, cleaned[c:c + 100])
    return {"src": src, "ck": ck, "endpoint": endpoint}


def new_marker(s3, where: dict) -> None:
    """A commit of 50 new files, now."""
    from s3sqs.core.files import S3File
    from s3sqs.state import markers
    from s3sqs.state.store import S3Store

    keys = [f"in/new-{i:02d}.csv" for i in range(PER_MARKER)]
    for k in keys:
        s3.put_object(Bucket=where["src"], Key=k, Body=b"")
    first = MARKERS * PER_MARKER + 1
    files = [S3File(where["src"], k, 0, "d41d8cd98f00b204e9800998ecf8427e", seq=first + i) for i, k in enumerate(keys)]
    markers.write(S3Store(f"s3://{where['ck']}/checkpoints/ingest/source-state", s3),
                  markers.marker_of(first, first + PER_MARKER - 1, int(time.time() * 1000), files))


def measure(where: dict) -> list[dict]:
    """The runs, with the cleaner on this process's path."""
    from s3sqs.cleaning.cleaner import Cleaner, ConsumerMarkers
    from s3sqs.cleaning.rule import Consumer
    from s3sqs.config.clean import parse_clean_settings
    from s3sqs.state.store import S3Store

    s3 = benchkit.aws_client("s3", where["endpoint"])
    calls: Counter = Counter()
    s3.meta.events.register("before-send.s3", lambda event_name, **_: calls.update([event_name.rsplit(".", 1)[-1]]))
    settings = parse_clean_settings({"cleanSource": "delete", "cleanSourceRetention": "1d"})
    out = []
    for name in ("first run", "next run, nothing new", "next run, 1 new marker of 50"):
        if name.endswith("of 50"):
            new_marker(s3, where)
        cleaner = Cleaner(s3, settings, where["src"],
                          [ConsumerMarkers(Consumer("ingest", "in/"), S3Store(f"s3://{where['ck']}/checkpoints/ingest/"
                                                                                "source-state", s3))],
                          S3Store(f"s3://{where['ck']}/source-cleaning", s3))
        calls.clear()
        t = time.monotonic()
        counts = cleaner.run(True)
        out.append({"run": name, "seconds": round(time.monotonic() - t, 2), "requests": sum(calls.values()),
                    "by_operation": dict(sorted(calls.items())), "statuses": {str(k): v for k, v in counts.items()}})
    return out


def child(code: Path, endpoint: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": f"{code}:{ROOT}"}
    r = subprocess.run([sys.executable, __file__, "--child", endpoint], env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"the run with {code} failed:\n{r.stderr}")
    return json.loads(r.stdout)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before-ref", default="main", help="the git ref whose cleaner is 'before' (default main)")
    p.add_argument("--child", metavar="ENDPOINT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        s3 = benchkit.aws_client("s3", args.child)
        print(json.dumps(measure(history(s3, args.child))))
        return 0

    with local_aws() as server, tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "before.tar"
        with open(archive, "wb") as f:
            subprocess.run(["git", "-C", str(ROOT), "archive", args.before_ref, "app"], stdout=f, check=True)
        with tarfile.open(archive) as t:
            t.extractall(tmp, filter="data")
        results = {f"before ({args.before_ref})": child(Path(tmp) / "app", server.endpoint_url),
                   "after (this checkout)": child(ROOT / "app", server.endpoint_url)}
    print(f"{MARKERS} markers of {PER_MARKER} files; {DUE} due, {(MARKERS - SETTLED_MARKERS - 1) * PER_MARKER:,} in "
          f"their retention, {SETTLED_MARKERS * PER_MARKER + PER_MARKER - DUE:,} cleaned before")
    for code, runs in results.items():
        for r in runs:
            ops = ", ".join(f"{op} {n:,}" for op, n in r["by_operation"].items())
            print(f"{code:<22} {r['run']:<30} {r['requests']:>6,} requests {r['seconds']:>6.2f} s  ({ops})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
