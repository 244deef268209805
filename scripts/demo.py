#!/usr/bin/env python3
"""The local demo: the deployable wiring on a moto server, sample files, the job until drained, a summary.

1. Start a moto server on 127.0.0.1 and build on it, from the CDK app's synthesized template, the
   bucket -> SNS topic -> per-consumer SQS queues with DLQs (one consumer per file format here, and
   two more for the CSV files: the table sinks).
2. Upload sample files: CSV (some gzip), JSON lines and Parquet, Hive-style partitioned paths, names
   with spaces and non-ASCII characters, and one multipart upload (which S3 announces twice).
3. Run app/job.py with --until-drained for each format, showing progress; then on the CSV files again
   into a Delta table and an Iceberg table (SQLite catalog), and, where PySpark 4.0.2 (EMR's Spark) and
   the jars make setup fetches are present, into a Delta table written by Spark's own Delta writer
   (--table-writer spark), as EMR users write one.
4. Print files, rows, batches, duplicates ignored and throughput; check output rows == input rows, in
   the Parquet output and in both tables, before and after compact-table.
Everything started here is stopped on exit, Ctrl-C included.
"""
from __future__ import annotations

import argparse
import gzip
import io
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import boto3
import pyarrow as pa
import pyarrow.parquet as pq

from devtools.local_aws import FAKE_ENV, start_moto_server
from devtools.local_spark import job_command, job_env
from devtools.committed import committed_rows
from ops.stack_outputs import StackOutputs

REGION = "us-east-1"
SCHEMA = "id LONG, customer STRING, amount DOUBLE, country STRING, day STRING"
COLUMNS = ["id", "customer", "amount", "country", "day"]
FORMATS = ("csv", "json", "parquet")
# One consumer queue per format, each subscribed with a prefix filter: the CDK app's own wiring.
DEMO_CONSUMERS = [{"name": fmt, "accountId": "123456789012", "prefix": f"landing/{fmt}/",
                   "maxReceiveCount": 5, "visibilityTimeoutSeconds": 120} for fmt in FORMATS]
# Two more consumers of the CSV files: the same inputs, written to a Delta and an Iceberg table.
TABLE_FORMATS = ("delta", "iceberg")
DEMO_CONSUMERS += [{"name": fmt, "accountId": "123456789012", "prefix": "landing/csv/",
                    "maxReceiveCount": 5, "visibilityTimeoutSeconds": 120} for fmt in TABLE_FORMATS]
# And one more: the CSV files into a Delta table written by Spark's own writer, on EMR's Spark 4.0.2.
SPARK_WRITER = "delta-spark"
DEMO_CONSUMERS += [{"name": SPARK_WRITER, "accountId": "123456789012", "prefix": "landing/csv/",
                    "maxReceiveCount": 5, "visibilityTimeoutSeconds": 120}]
SPARK40_PYTHON = ROOT / ".venv-spark40" / "bin" / "python"
DEMO_ROLE = "arn:aws:iam::123456789012:role/demo-reader"  # the stack grants consumers to roles


@dataclass
class Upload:
    keys: list[str] = field(default_factory=list)
    rows: set = field(default_factory=set)


def say(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def make_rows(rng: random.Random, start: int, n: int, day: str) -> list[dict]:
    names = ["Zoë", "Ana María", "Jürgen", "李雷", "O'Brien", "Łukasz"]
    return [{"id": i, "customer": rng.choice(names), "amount": round(rng.uniform(1, 500), 2),
             "country": rng.choice(["DE", "FR", "JP", "US"]), "day": day} for i in range(start, start + n)]


def as_csv(rows: list[dict], header: bool = True) -> bytes:
    lines = [",".join(COLUMNS[:3])] if header else []
    lines += [f'{r["id"]},"{r["customer"]}",{r["amount"]}' for r in rows]
    return ("\n".join(lines) + "\n").encode()


def as_json(rows: list[dict]) -> bytes:
    import json
    return "".join(json.dumps({k: r[k] for k in COLUMNS[:4]}, ensure_ascii=False) + "\n" for r in rows).encode()


def as_parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{k: r[k] for k in COLUMNS[:3]} for r in rows]), buf)
    return buf.getvalue()


def upload_samples(s3, bucket: str, files_per_format: int, rows_per_file: int) -> dict[str, Upload]:
    """Returns, per format, the keys written and the rows they hold (as the sink should show them)."""
    rng = random.Random(7)
    uploads = {fmt: Upload() for fmt in FORMATS}
    next_id = 0
    for fmt in FORMATS:
        for i in range(files_per_format):
            day = f"2026-11-{1 + i % 3:02d}"
            country = "DE" if fmt != "json" else None
            rows = make_rows(rng, next_id, rows_per_file, day)
            next_id += rows_per_file
            name = f"order batch {i} – naïve" if i % 10 == 0 else f"orders-{i:04d}"
            if fmt == "csv":
                for r in rows:
                    r["country"] = country
                key = f"landing/csv/country={country}/day={day}/{name}.csv" + (".gz" if i % 4 == 1 else "")
                body = as_csv(rows)
                body = gzip.compress(body, mtime=0) if key.endswith(".gz") else body
            elif fmt == "json":
                key = f"landing/json/day={day}/{name}.json"
                body = as_json(rows)
            else:
                for r in rows:
                    r["country"] = country
                key = f"landing/parquet/country={country}/day={day}/{name}.parquet"
                body = as_parquet(rows)
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            uploads[fmt].keys.append(key)
            uploads[fmt].rows.update(tuple(r[c] for c in COLUMNS) for r in rows)
        if fmt == "csv":  # a multipart upload: S3 announces it twice, the source ingests it once
            rows = make_rows(rng, next_id, 260_000, "2026-11-04")
            next_id += len(rows)
            for r in rows:
                r["country"] = "DE"
            body = as_csv(rows)
            key = "landing/csv/country=DE/day=2026-11-04/big multipart upload.csv"
            mp = s3.create_multipart_upload(Bucket=bucket, Key=key)
            cut = 5 * 1024 * 1024 + body[5 * 1024 * 1024:].index(b"\n") + 1
            parts = []
            for n, chunk in enumerate((body[:cut], body[cut:]), start=1):
                etag = s3.upload_part(Bucket=bucket, Key=key, UploadId=mp["UploadId"], PartNumber=n, Body=chunk)["ETag"]
                parts.append({"ETag": etag, "PartNumber": n})
            s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=mp["UploadId"],
                                         MultipartUpload={"Parts": parts})
            uploads[fmt].keys.append(key)
            uploads[fmt].rows.update(tuple(r[c] for c in COLUMNS) for r in rows)
        say(f"uploaded {len(uploads[fmt].keys)} {fmt} files with {len(uploads[fmt].rows)} rows")
    return uploads


def run_job(fmt: str, queue_url: str, endpoint: str, work: Path, children: list) -> float:
    """Run the job until drained, echoing its progress lines; returns wall seconds."""
    ck, out = work / fmt / "checkpoint", work / fmt / "table"
    options = ["header=true", "partitionColumns=country,day"] if fmt == "csv" else \
        ["partitionColumns=day"] if fmt == "json" else ["partitionColumns=country,day"]
    cmd = job_command(
        "--queue-url", queue_url, "--format", fmt, "--schema", SCHEMA, "--checkpoint", str(ck),
        "--output", str(out), "--endpoint-url", endpoint, "--region", REGION, "--until-drained",
        "--idle-checks", "2", "--trigger-interval", "1 second", "--name", f"demo-{fmt}",
        "--option", "maxFilesPerTrigger=100", "--option", "sqs.longPollingWaitTimeSeconds=2")
    for o in options:
        cmd += ["--option", o]
    return run_logged(cmd, fmt, work, children)


def run_logged(cmd: list[str], name: str, work: Path, children: list, env: dict | None = None) -> float:
    log_path = work / f"job-{name}.log"
    say(f"running the {name} job (log: {log_path.relative_to(ROOT) if log_path.is_relative_to(ROOT) else log_path})")
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env or job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=ROOT)
        children.append(proc)
        for raw in proc.stdout:
            log.write(raw)
            line = raw.decode(errors="replace").rstrip()
            if line.startswith("[job]") or " s3sqs: s3-sqs batch" in line or "ERROR" in line:
                print(f"    {line.split(' s3sqs: ')[-1]}", flush=True)
            elif " s3sqs.sinks: " in line:
                print(f"    {line.split(' s3sqs.sinks: ')[-1]}", flush=True)
        rc = proc.wait()
    children.remove(proc)
    if rc != 0:
        raise SystemExit(f"the {name} job failed with exit code {rc}; see {log_path}")
    return time.monotonic() - t0


def batch_window(ck: Path) -> float:
    """Seconds from the first planned batch to the last commit, read from the checkpoint."""
    offsets = [p for p in (ck / "offsets").iterdir() if p.name.isdigit()]
    commits = [p for p in (ck / "commits").iterdir() if p.name.isdigit()]
    return max(p.stat().st_mtime for p in commits) - min(p.stat().st_mtime for p in offsets)


def summarise(fmt: str, up: Upload, work: Path, wall: float) -> bool:
    from s3sqs.state.snapshots import Snapshots, read_status
    from s3sqs.state.store import LocalStore
    ck = work / fmt / "checkpoint"
    status = read_status(Snapshots(LocalStore(str(ck / "source-state"))))
    stats = {**status["stats"], "last_seq": status["last_seq"]}
    rows = committed_rows(work / fmt / "table", COLUMNS)
    got = {(i, c, a, co, d) for i, c, a, co, d in rows}
    window = batch_window(ck)
    batches = len([p for p in (ck / "commits").iterdir() if p.name.isdigit()])
    ok = len(rows) == len(up.rows) and got == up.rows
    print(f"  {fmt:8s} files {stats.get('last_seq', 0):5d}  rows {len(rows):7d}  batches {batches:3d}  "
          f"duplicates ignored {stats.get('duplicate', 0):3d}  "
          f"{stats.get('last_seq', 0) / window:7.1f} files/s  {len(rows) / window:9.0f} rows/s  "
          f"(batches {window:.1f} s, job {wall:.1f} s)  {'OK' if ok else 'MISMATCH'}")
    if not ok:
        print(f"    expected {len(up.rows)} rows; missing {len(up.rows - got)}, unexpected {len(got - up.rows)}, "
              f"duplicates {len(rows) - len(got)}")
    return ok


def table_target(fmt: str, work: Path):
    """The demo's Delta table (a folder) or Iceberg table (in a SQLite catalog)."""
    from s3sqs.sinks.kinds.iceberg import CatalogConfig
    from s3sqs.sinks.delta import DeltaTarget
    from s3sqs.sinks.iceberg import IcebergTarget, open_catalog
    from s3sqs.sinks.location import Location
    if fmt == "delta":
        return DeltaTarget(Location.parse(str(work / "delta" / "table"), "table"), ("country", "day"))
    catalog = CatalogConfig("sql", f"sqlite:///{work / 'iceberg' / 'catalog.db'}", None)
    return IcebergTarget(open_catalog(catalog), "demo.orders", ("country", "day"))


def run_table_job(fmt: str, queue_url: str, endpoint: str, work: Path, children: list) -> float:
    """The CSV files again, into a table, in batches of 20 files: each batch adds small files per
    partition, which compact-table combines afterwards."""
    (work / fmt).mkdir(parents=True, exist_ok=True)
    table = (["--table", str(work / fmt / "table")] if fmt == "delta" else
             ["--table", "demo.orders", "--catalog", "sql", "--catalog-uri", f"sqlite:///{work / fmt / 'catalog.db'}",
              "--warehouse", str(work / fmt / "warehouse")])
    cmd = job_command(
        "--queue-url", queue_url, "--format", "csv", "--schema", SCHEMA, "--checkpoint", str(work / fmt / "checkpoint"),
        "--sink", fmt, *table, "--partition-by", "country,day", "--endpoint-url", endpoint, "--region", REGION,
        "--until-drained", "--idle-checks", "2", "--trigger-interval", "1 second", "--name", f"demo-{fmt}",
        "--option", "header=true", "--option", "partitionColumns=country,day",
        "--option", "maxFilesPerTrigger=20", "--option", "sqs.longPollingWaitTimeSeconds=2")
    return run_logged(cmd, fmt, work, children)


def spark_writer_missing() -> str | None:
    """Why the Spark-writer table cannot be shown here, or None."""
    from devtools import jars
    if not (SPARK40_PYTHON.exists() and (SPARK40_PYTHON.parent / "spark-distribution").exists()):
        return "no .venv-spark40 (PySpark 4.0.2, the Spark the jars are built for); make setup builds it"
    if not jars.available("delta"):
        return f"Delta's jars are not in {jars.cache_dir()}; make setup fetches them"
    return None


def run_spark_writer_job(queue_url: str, endpoint: str, work: Path, children: list) -> float:
    """The CSV files again, into a Delta table that Spark's own Delta writer commits (Spark 4.0.2)."""
    d = work / SPARK_WRITER
    d.mkdir(parents=True, exist_ok=True)
    args = ("--queue-url", queue_url, "--format", "csv", "--schema", SCHEMA, "--checkpoint", str(d / "checkpoint"),
            "--sink", "delta", "--table-writer", "spark", "--table", str(d / "table"), "--partition-by", "country,day",
            "--endpoint-url", endpoint, "--region", REGION, "--until-drained", "--idle-checks", "2",
            "--trigger-interval", "1 second", "--name", "demo-delta-spark", "--option", "header=true",
            "--option", "partitionColumns=country,day", "--option", "maxFilesPerTrigger=100",
            "--option", "sqs.longPollingWaitTimeSeconds=2")
    return run_logged(job_command(*args, python=SPARK40_PYTHON), SPARK_WRITER, work, children,
                      env=job_env(SPARK40_PYTHON))


def summarise_spark_writer(up: Upload, work: Path, wall: float) -> bool:
    from deltalake import DeltaTable
    table = DeltaTable(str(work / SPARK_WRITER / "table"))
    data = table.to_pyarrow_table(columns=COLUMNS)
    rows = list(zip(*(data.column(c).to_pylist() for c in COLUMNS)))
    batches = len([p for p in (work / SPARK_WRITER / "checkpoint" / "commits").iterdir() if p.name.isdigit()])
    ok = len(rows) == len(up.rows) and set(rows) == up.rows
    print(f"  {'delta':8s} table  rows {len(rows):7d}  batches {batches:3d}  data files {len(table.file_uris()):4d}  "
          f"(job {wall:.1f} s, Spark {table.history(1)[0].get('engineInfo', '?')})  {'OK' if ok else 'MISMATCH'}")
    return ok


def summarise_table(fmt: str, up: Upload, work: Path, wall: float) -> bool:
    target = table_target(fmt, work)
    if fmt == "delta":
        data = target.table().to_pyarrow_table(columns=COLUMNS)
    else:
        data = target.table().scan(selected_fields=tuple(COLUMNS)).to_arrow()
    rows = list(zip(*(data.column(c).to_pylist() for c in COLUMNS)))
    got = set(rows)
    batches = len([p for p in (work / fmt / "checkpoint" / "commits").iterdir() if p.name.isdigit()])
    files = len(target.files())
    ok = len(rows) == len(up.rows) and got == up.rows
    print(f"  {fmt:8s} table  rows {len(rows):7d}  batches {batches:3d}  data files {files:4d}  "
          f"(job {wall:.1f} s)  {'OK' if ok else 'MISMATCH'}")
    if not ok:
        print(f"    expected {len(up.rows)} rows; missing {len(up.rows - got)}, unexpected {len(got - up.rows)}, "
              f"duplicates {len(rows) - len(got)}")
    return ok


def compact_table(fmt: str, work: Path) -> bool:
    """compact-table on the table (as .venv/bin/compact-table runs it); the rows must not change."""
    from ops.compaction.cli import main as compact
    args = (["--format", "delta", "--table", str(work / "delta" / "table")] if fmt == "delta" else
            ["--format", "iceberg", "--table", "demo.orders", "--catalog", "sql",
             "--catalog-uri", f"sqlite:///{work / 'iceberg' / 'catalog.db'}"]) + ["--apply"]
    print(f"  {fmt}: .venv/bin/compact-table {shlex.join(args)}", flush=True)
    return compact(args) == 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=100, help="files per format (default 100)")
    p.add_argument("--rows", type=int, default=200, help="rows per file (default 200)")
    p.add_argument("--work-dir", default=str(ROOT / "demo-output"), help="where tables and logs go")
    args = p.parse_args(argv)
    if args.files < 1 or args.rows < 1:
        p.error("--files and --rows must be at least 1")
    work = Path(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ.update(FAKE_ENV)

    children: list[subprocess.Popen] = []
    server = None

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    try:
        say("starting moto on 127.0.0.1")
        server = start_moto_server(work / "moto.log")
        say(f"moto at {server.endpoint_url} (pid {server.process.pid})")
        say("synthesizing the CDK app and building its wiring on moto")
        from infra.local_stand_in import deploy_to_moto, synth_template
        outputs = StackOutputs("demo", deploy_to_moto(synth_template({"consumers": DEMO_CONSUMERS, "crossAccountPrincipals": [DEMO_ROLE]}),
                                                      server.endpoint_url, REGION))
        s3 = boto3.client("s3", region_name=REGION, endpoint_url=server.endpoint_url)
        uploads = upload_samples(s3, outputs.get("SourceBucketName"), args.files, args.rows)
        walls = {fmt: run_job(fmt, outputs.consumer(fmt).queue_url, server.endpoint_url, work, children)
                 for fmt in FORMATS}
        walls.update({fmt: run_table_job(fmt, outputs.consumer(fmt).queue_url, server.endpoint_url, work, children)
                      for fmt in TABLE_FORMATS})
        missing = spark_writer_missing()
        if missing:
            say(f"not showing a table written by Spark's own Delta writer: {missing}")
        else:
            walls[SPARK_WRITER] = run_spark_writer_job(outputs.consumer(SPARK_WRITER).queue_url, server.endpoint_url,
                                                       work, children)
        print("\nSummary (each job: spark-submit until its queue was drained)")
        ok = all([summarise(fmt, uploads[fmt], work, walls[fmt]) for fmt in FORMATS])
        print("The CSV files again, into tables:")
        ok = all([summarise_table(fmt, uploads["csv"], work, walls[fmt]) for fmt in TABLE_FORMATS]) and ok
        if SPARK_WRITER in walls:
            print("And into a Delta table committed by Spark's own Delta writer (--table-writer spark, Spark 4.0.2):")
            ok = summarise_spark_writer(uploads["csv"], work, walls[SPARK_WRITER]) and ok
        print("\nCompacting the tables' small files:")
        ok = all([compact_table(fmt, work) and summarise_table(fmt, uploads["csv"], work, walls[fmt])
                  for fmt in TABLE_FORMATS]) and ok
        print(f"\nOutput tables under {work}; every input row exactly once: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    except KeyboardInterrupt:
        say("interrupted; stopping everything")
        return 130
    finally:
        for proc in children:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if server is not None:
            server.stop()
            say("moto stopped")


if __name__ == "__main__":
    sys.exit(main())
