"""What the benchmark scripts share: their common flags, the run's header and closing lines, the moto
server and scratch folders, and the fresh Python processes each side of a comparison runs in.

A script imports it from its own folder (run as `python scripts/NAME.py`, that folder is on sys.path; a
script loaded by path, as the tests load them, puts it there first).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from devtools.local_aws import local_aws, wire_consumer
from devtools.local_spark import sparks_of

ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"


# ------------------------------------------------------------------------------------------- flags

def parser(doc: str) -> argparse.ArgumentParser:
    """The script's parser, described by the first line of its docstring."""
    return argparse.ArgumentParser(description=doc.split("\n")[0])


def add_reps(p: argparse.ArgumentParser, default: int, help: str | None = None) -> None:
    p.add_argument("--reps", type=int, default=default, help=help)


def add_worker_flags(p: argparse.ArgumentParser, kinds: list[str], *names: str) -> None:
    """The hidden flags the script passes to itself when it runs one side as a worker process."""
    p.add_argument("--worker", choices=kinds, help=argparse.SUPPRESS)
    for name in names:
        p.add_argument(name, help=argparse.SUPPRESS)


def sparks_or_s3(p: argparse.ArgumentParser, args) -> list[str]:
    """--spark's PySparks; by default both, or 4.0.2 alone with --s3 (S3A's jars fit its Hadoop only)."""
    return sparks_of(p, args.spark or ("4.0.2" if args.s3 else "4.0.2,4.3"))


def check_s3(p: argparse.ArgumentParser, args, sparks: list[str]) -> None:
    """With --s3, the parser's error unless S3A's jars are here and fit every Spark chosen."""
    if args.s3:
        from devtools import jars
        problem = jars.s3a_problem(sparks)
        if problem:
            p.error(problem)


# --------------------------------------------------------------------------------- the run's lines

def load() -> float:
    """The one-minute load average: the figures mean little on a busy machine."""
    return os.getloadavg()[0]


def header() -> str:
    """When and on what the run starts: '2026-11-27 15:10, 2 cores, load 0.5'."""
    return f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load {load():.1f}"


def print_end_load() -> None:
    print(f"load average at the end: {load():.1f}")


def ratios_text(ratios) -> str:
    return ", ".join(f"{r:.2f}" for r in ratios)


# ------------------------------------------------------------------------------------- runs and figures

def in_turn(rep: int, kinds: list[str]) -> list[str]:
    """The sides in run `rep`'s order: alternating, so that neither always runs first."""
    return kinds if rep % 2 == 0 else kinds[::-1]


def paired(reps: int, run: Callable[[int, str], dict], kinds=("native", "s3sqs")) -> dict[str, list[dict]]:
    """run(rep, kind) `reps` times for each side, in alternating order; each side's results."""
    results = {kind: [] for kind in kinds}
    for rep in range(reps):
        for kind in in_turn(rep, list(kinds)):
            results[kind].append(run(rep, kind))
    return results


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def batch_commit_times(table: Path) -> dict[str, float]:
    """Each committed output file's name -> when its batch was committed."""
    from devtools.committed import first_listings
    return {path.name: mtime for path, (_, mtime) in first_listings(table).items()}


# --------------------------------------------------------------------------------- moto and folders

def on_moto(describe: str, compare: Callable[[str], None]) -> int:
    """Fake credentials and a moto server for the run: the header line (then `describe`), compare(the
    server's endpoint), the closing load line."""
    with local_aws() as server:
        print(f"{header()}; {describe}", flush=True)
        compare(server.endpoint_url)
        print_end_load()
    return 0


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder, removed on the way out."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def aws_client(service: str, endpoint: str):
    import boto3
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION)


def wired(endpoint: str, name: str, max_receive_count: int | None = None):
    """A fresh copy of the stack's wiring for one consumer (bucket -> SNS -> queue and DLQ), named after
    `name`, and clients of the moto server: (s3, sqs, the stand-in's ConsumerPath)."""
    path = wire_consumer(endpoint, name, max_receive_count, region=REGION)
    return aws_client("s3", endpoint), aws_client("sqs", endpoint), path


# ------------------------------------------------------------------------------------ worker processes

def spark_env(python: Path) -> dict[str, str]:
    """The environment of a worker process: its Spark's Python workers run the same interpreter."""
    return {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
            "SPARK_LOCAL_IP": "127.0.0.1"}


def worker_result(returncode: int, stdout: str, stderr: str, what: str) -> dict:
    """The JSON a worker printed last, or the end of its stderr when it failed."""
    if returncode != 0:
        raise SystemExit(f"{what} failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def run_worker(python: Path, script: str, args: list[str], what: str, timeout: float) -> tuple[dict, str]:
    """`script --worker ...` in a fresh process of `python`: (its result, its stderr)."""
    r = subprocess.run([str(python), script, "--worker", *args], env=spark_env(python), capture_output=True,
                       text=True, timeout=timeout)
    return worker_result(r.returncode, r.stdout, r.stderr, what), r.stderr


def spark_builder(app_name: str, log_level: str = "ERROR"):
    """A local session's builder with the settings every benchmark's worker uses."""
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName(app_name)
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
            .config("spark.log.level", log_level))


def with_s3a(builder, endpoint: str):
    """The builder, with Spark's file source reading s3a:// from the moto server."""
    from devtools.jars import s3a_conf
    for key, value in s3a_conf(endpoint).items():
        builder = builder.config(key, value)
    return builder


def register_source(spark) -> None:
    """This checkout's s3-sqs source on `spark`."""
    sys.path.insert(0, str(ROOT / "app"))
    from s3sqs.planning.source import register
    register(spark)


def warm_python_workers(spark, file_format: str | None = None) -> None:
    """As the job does, before the query starts."""
    from s3sqs.job.warmup import warm_python_workers as warm
    warm(spark, file_format)
