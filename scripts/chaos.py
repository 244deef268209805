#!/usr/bin/env python3
"""Chaos and fuzz runs of the job on the local AWS stand-in, each ending in an exact account.

kills  Uploads files in waves while the job runs, SIGKILLs the job's whole process group at random
       moments, restarts it on the same checkpoint, and finally runs it until drained. Then it compares
       the sink with what was uploaded (rows lost, rows duplicated) and looks at the queue and the DLQ.
       With --cluster the job runs on Spark's local-cluster master (two executor JVMs), and each kill
       takes one part of it at random: the whole job, the driver's JVM alone, one executor JVM, or one
       Python worker; the job is restarted only when its driver died.
outage Runs the job with its source state on the stand-in's S3, and freezes the stand-in (SIGSTOP, so
       S3, SQS and the state all stop answering) for --seconds mid-stream, between waves of files. The
       same run must ride through it and ingest every file; then the same account as kills.
fuzz   Sends message bodies of many families (empty, test events, deletions, restores, MinIO's names,
       SNS and EventBridge wrappers, broken JSON, ...) and uploads bad files (corrupt gzip, truncated
       Parquet, zero bytes, wrong column counts, deleted before reading), runs the job until drained, and
       counts per family what became of each message: ingested, quarantined, missing, skipped or
       unparseable (each logged with its message id), or vanished (no trace: a failure).

Exit status 0 when nothing was lost, duplicated or vanished and the queue and DLQ are empty.
"""
from __future__ import annotations

import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, also when a test loads this file by path
import benchkit  # noqa: E402
from devtools import processes  # noqa: E402
from devtools.local_aws import local_aws, work_dir  # noqa: E402
from devtools.local_spark import (CLUSTER_MASTER, LOCAL_MASTER, ROOT, job_command, job_env,  # noqa: E402
                                  private_spark_home, wait_for)
from devtools.committed import committed_rows  # noqa: E402

REGION = benchkit.REGION
ROWS = 20


def wire(endpoint: str, name: str, max_receive_count: int):
    """The stack's own wiring (bucket -> SNS -> queue and DLQ), named after `name`."""
    s3, sqs, path = benchkit.wired(endpoint, name, max_receive_count)
    return s3, sqs, path.queue_url, path.dlq_url, path.bucket


def depth(sqs, url: str) -> int:
    a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return sum(int(a[k]) for k in ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                                   "ApproximateNumberOfMessagesDelayed"))


class Job:
    """One spark-submit of the job in its own process group, so a kill takes every process of it."""

    def __init__(self, args: list[str], log: Path, env: dict, master: str = LOCAL_MASTER):
        self.log = open(log, "ab")
        # A local cluster's executor logs go beside the job's (spark-home/work/<app>/<executor>/stderr).
        home = private_spark_home(log.parent) if master != LOCAL_MASTER else None
        env = {**env, "SPARK_HOME": str(home)} if home else env
        self.proc = subprocess.Popen(job_command(*args, master=master, home=home), env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.kill()


def job_args(q: str, endpoint: str, work: Path, fmt: str, schema: str, extra=()) -> list[str]:
    return ["--queue-url", q, "--format", fmt, "--schema", schema, "--checkpoint", str(work / "ck"),
            "--output", str(work / "out"), "--endpoint-url", endpoint, "--region", REGION,
            "--trigger-interval", "1 second", "--option", "sqs.longPollingWaitTimeSeconds=1",
            "--option", "sqs.visibilityTimeoutSeconds=5", *extra]


# ------------------------------------------------------------------------------------------- kills

def csv_file(first_id: int) -> bytes:
    return ("id,name\n" + "".join(f"{first_id + i},row {first_id + i}\n" for i in range(ROWS))).encode()


TARGETS = ("job", "driver", "executor", "worker")  # what a kill takes on the cluster


def run_kills(endpoint: str, work: Path, kills: int, waves: int, files: int, seed: int,
              master: str = LOCAL_MASTER) -> dict:
    rng = random.Random(seed)
    s3, sqs, q, dlq, bucket = wire(endpoint, f"chaos-{seed}", max_receive_count=5)
    uploaded: set[int] = set()
    uploads: list[threading.Thread] = []

    def upload_wave(w: int, delay: float) -> None:
        time.sleep(delay)
        for n in range(w * files, (w + 1) * files):
            s3.put_object(Bucket=bucket, Key=f"w{w}/file {n}.csv", Body=csv_file(n * ROWS))
            uploaded.update(range(n * ROWS, (n + 1) * ROWS))

    args = job_args(q, endpoint, work, "csv", "id LONG, name STRING",
                    ["--option", "header=true", "--option", "maxFilesPerTrigger=15"])
    ck = work / "ck"
    killed_in = Counter()
    job, starts = None, 0
    for k in range(kills):
        # The first `waves` kills each get a wave of files, uploaded while the job starts (or runs), so
        # there is a batch to die in; later ones find a quiet queue and die while starting, planning or idling.
        if k < waves:
            uploads.append(threading.Thread(target=upload_wave, args=(k, rng.uniform(0, 4)), daemon=True))
            uploads[-1].start()
        before = _logged(ck)
        if job is None:
            log = work / f"run-{starts:03d}.log"
            job, starts = Job(args, log, job_env(), master), starts + 1
        # Each kill waits for the job to get going (a batch of its own logged, or, with nothing left to
        # ingest, its query started), then strikes: half the time at once, half a random moment later.
        started = time.monotonic()
        while time.monotonic() - started < 180 and job.proc.poll() is None and not _logged(ck) - before:
            if k >= waves and _query_started(log) and depth(sqs, q) == 0:
                break
            time.sleep(0.02)
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0, 12))
        phase = _phase(ck)
        target = rng.choice(TARGETS) if master != LOCAL_MASTER else "job"
        if job.proc.poll() is not None:  # it ended by itself (a failed query exits 1): counted apart
            target = f"none, the job had exited with {job.proc.returncode}"
            job.kill()
        else:
            struck = strike(job, target, rng)
            target = struck if struck == target else f"{struck} (no {target} was running)"
        if not target.startswith(("executor", "worker")):
            job = None
        label = phase if master == LOCAL_MASTER else f"{target}, {phase}"
        killed_in[label] += 1
        print(f"  kill {k + 1}/{kills}: {label}", flush=True)
    if job is not None:
        job.kill()
    for t in uploads:
        t.join()
    for w in range(kills, waves):  # more waves than kills: the rest go to the final run
        upload_wave(w, 0)
    final = Job(args + ["--until-drained", "--idle-checks", "2"], work / "run-final.log", job_env(), master)
    rc = final.wait(timeout=900)
    return {"kills": kills, "master": master, "job_starts": starts + 1, "killed_in": dict(killed_in),
            **account(work, sqs, q, dlq, uploaded, rc)}


def strike(job: Job, target: str, rng: random.Random) -> str:
    """SIGKILL `target` of the running job; what was killed (a missing worker or executor: the next
    thing up). A dead driver takes the rest of the job's process group along, as its executors would."""
    found = {"worker": processes.python_workers, "executor": processes.executor_jvms}
    while target in found:
        pids = found[target](job.proc.pid)
        if pids:
            _kill(rng.choice(pids))
            return target
        target = "executor" if target == "worker" else "driver"
    if target == "driver":
        _kill(job.proc.pid)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and processes.executor_jvms(job.proc.pid):  # executors stop by themselves
            time.sleep(0.2)
    job.kill()
    return target


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass


def account(work: Path, sqs, q: str, dlq: str, uploaded: set[int], rc: int) -> dict:
    """Rows in the sink against rows uploaded, and what is left in the queue and its DLQ."""
    got = Counter(r[0] for r in committed_rows(work / "out", ["id"]))
    return {"final_exit": rc, "rows_expected": len(uploaded), "rows_lost": len(uploaded - set(got)),
            "rows_duplicated": sum(c - 1 for c in got.values() if c > 1),
            "rows_unexpected": len(set(got) - uploaded), "queue": depth(sqs, q), "dlq": depth(sqs, dlq)}


# ------------------------------------------------------------------------------------------ outage

def run_outage(server, work: Path, seconds: float, waves: int, files: int, master: str = LOCAL_MASTER) -> dict:
    """Waves of files with the stand-in frozen for `seconds` after the first: the running job rides through."""
    endpoint = server.endpoint_url
    s3, sqs, q, dlq, bucket = wire(endpoint, "outage", max_receive_count=5)
    s3.create_bucket(Bucket="outage-state")
    args = job_args(q, endpoint, work, "csv", "id LONG, name STRING",
                    ["--option", "header=true", "--option", "maxFilesPerTrigger=10",
                     "--state-location", "s3://outage-state/source-state"])
    uploaded: set[int] = set()

    def upload_wave(w: int) -> None:
        for n in range(w * files, (w + 1) * files):
            s3.put_object(Bucket=bucket, Key=f"w{w}/file {n}.csv", Body=csv_file(n * ROWS))
            uploaded.update(range(n * ROWS, (n + 1) * ROWS))

    ck = work / "ck"
    job = Job(args, work / "run-outage.log", job_env(), master)
    frozen_at = None
    try:
        upload_wave(0)
        if not wait_for(lambda: _committed(ck) or job.proc.poll() is not None, 300, interval=0.2):
            raise SystemExit("no batch committed within 300 s: see run-outage.log")
        for w in range(1, waves):
            before = _logged(ck)
            upload_wave(w)
            if w == 1:  # mid-stream: as soon as a batch of this wave is planned
                wait_for(lambda: _logged(ck) - before or job.proc.poll() is not None, 120, interval=0.01)
                frozen_at = _phase(ck)
                os.kill(server.process.pid, signal.SIGSTOP)
                try:
                    time.sleep(seconds)
                finally:
                    os.kill(server.process.pid, signal.SIGCONT)
        expected = len(uploaded)
        # Ridden through: the same run, still running, has every row in the sink.
        rode_through = wait_for(lambda: job.proc.poll() is not None or
                                len(committed_rows(work / "out", ["id"])) >= expected, 300 + seconds, interval=1) \
            and job.proc.poll() is None
    finally:
        job.kill()
    final = Job(args + ["--until-drained", "--idle-checks", "2"], work / "run-final.log", job_env(), master)
    rc = final.wait(timeout=900)
    return {"outage_seconds": seconds, "master": master, "frozen_at": frozen_at, "rode_through": rode_through,
            **account(work, sqs, q, dlq, uploaded, rc)}


def _batch_ids(ck: Path, log: str) -> set[int]:
    """The batch ids in one of Spark's checkpoint logs (offsets: planned, commits: committed)."""
    folder = ck / log
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.is_dir() else set()


def _committed(ck: Path) -> set[int]:
    return _batch_ids(ck, "commits")


def _query_started(log: Path) -> bool:
    return b"[job] query " in log.read_bytes() if log.exists() else False


def _logged(ck: Path) -> set[int]:
    return _batch_ids(ck, "offsets")


def _phase(ck: Path) -> str:
    offsets, commits = _logged(ck), _committed(ck)
    if not offsets:
        return "before the first batch"
    return "batch logged, not committed" if max(offsets) not in commits else "between batches"


# -------------------------------------------------------------------------------------------- fuzz

def record(bucket: str, key: str, name: str = "ObjectCreated:Put", size=10) -> dict:
    return {"eventVersion": "2.1", "eventSource": "aws:s3", "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
            time.gmtime()), "eventName": name,
            "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": size, "eTag": "e"}}}


def fuzz_bodies(bucket: str) -> dict[str, list[str]]:
    """Message bodies by family; the files they name that exist were uploaded as good.csv."""
    good = lambda k: json.dumps({"Records": [record(bucket, k)]})  # noqa: E731
    return {
        "s3 event": [good("fz/good.csv")],
        "empty Records": ['{"Records": []}'],
        "test event": [json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": bucket})],
        "ObjectRemoved": [json.dumps({"Records": [record(bucket, "fz/gone.csv", "ObjectRemoved:Delete")]})],
        "ObjectRestore": [json.dumps({"Records": [record(bucket, "fz/good.csv", "ObjectRestore:Completed")]})],
        "MinIO event name": [json.dumps({"Records": [record(bucket, "fz/minio.csv", "s3:ObjectCreated:Put")]})],
        "SNS envelope": [json.dumps({"Type": "Notification", "Message": good("fz/sns.csv")})],
        "SNS broken inner": [json.dumps({"Type": "Notification", "Message": "{not json"})],
        "EventBridge created": [json.dumps({"source": "aws.s3", "detail-type": "Object Created", "time":
                                            "2026-11-23T00:00:00Z", "detail": {"bucket": {"name": bucket},
                                                                               "object": {"key": "fz/eb.csv",
                                                                                          "size": 10}}})],
        "EventBridge other": [json.dumps({"source": "aws.s3", "detail-type": "Object Deleted", "detail": {}})],
        "not JSON": ["hello", "{", "\u0000\u0001"],
        "JSON not object": ["[1, 2]", "42", "null"],
        "unknown object": ['{"hello": "world"}'],
        "bad record": [json.dumps({"Records": [{"eventName": "ObjectCreated:Put", "s3": {"bucket": {}}}]}),
                       json.dumps({"Records": [dict(record(bucket, "fz/x.csv"), eventTime="yesterday")]})],
        "mixed records": [json.dumps({"Records": [record(bucket, "fz/mixed.csv"),
                                                  record(bucket, "fz/mixed.csv", "ObjectRemoved:Delete")]})],
        "duplicate": [good("fz/good.csv")],
        "file never created": [good("fz/never-there.csv")],
    }


def bad_files() -> dict[str, tuple[str, bytes | None]]:
    """Files by family: key -> bytes (None: announced, then deleted before it is read)."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": [1], "name": ["p"]}), buf)
    return {
        "corrupt gzip": ("fz/corrupt.csv.gz", b"\x1f\x8b\x08\x00garbage"),
        "zero bytes": ("fz/empty.csv", b""),
        "wrong column count": ("fz/ragged.csv", b"id,name\n1,a,extra\n2\n3,c\n"),
        "bad values": ("fz/values.csv", b"id,name\nnot-a-number,a\n"),
        "parquet named csv": ("fz/parquet.csv", buf.getvalue()[:-20]),
        "binary garbage": ("fz/garbage.csv", bytes(range(256)) * 4),
        "deleted before read": ("fz/deleted.csv", None),
    }


def run_fuzz(endpoint: str, work: Path) -> dict:
    s3, sqs, q, dlq, bucket = wire(endpoint, "fuzz", max_receive_count=3)
    for key in ("fz/good.csv", "fz/minio.csv", "fz/sns.csv", "fz/eb.csv", "fz/mixed.csv"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"id,name\n1,a\n")  # announced below, family by family
    sqs.purge_queue(QueueUrl=q)  # their own announcements: the families below announce them one way each
    sent: dict[str, str] = {}
    for family, bodies in fuzz_bodies(bucket).items():
        for body in bodies:
            sent[sqs.send_message(QueueUrl=q, MessageBody=body or " ")["MessageId"]] = family
    files = bad_files()
    for family, (key, data) in files.items():
        s3.put_object(Bucket=bucket, Key=key, Body=data or b"1,x\n")
        if data is None:
            s3.delete_object(Bucket=bucket, Key=key)
    env = {**job_env(), "S3SQS_DEBUG": "1"}  # every message's fate, with its id, in the log
    log = work / "fuzz.log"
    rc = Job(job_args(q, endpoint, work, "csv", "id LONG, name STRING, _rescued_data STRING",
                      ["--option", "header=true", "--until-drained", "--idle-checks", "2"]), log, env).wait(600)
    text = log.read_text(errors="replace")
    fates = dict(re.findall(r"message (\S+): (\w+); ", text))
    per_family: dict[str, Counter] = defaultdict(Counter)
    received_ids = set()
    for mid, family in sent.items():
        per_family[family][fates.get(mid, "vanished")] += 1
        received_ids.add(mid)
    # The uploads' own notifications: one message each, fate by file outcome.
    records = [json.loads(p.read_text()) for p in (work / "ck" / "quarantine" / "batches").rglob("*.json")] \
        if (work / "ck" / "quarantine").is_dir() else []
    by_file = {r["file"].rsplit("/", 1)[-1]: r["status"] for r in records}
    others = [(mid, fate) for mid, fate in fates.items() if mid not in received_ids]
    for family, (key, _) in files.items():
        name = key.rsplit("/", 1)[-1]
        per_family[f"file: {family}"][by_file.get(name, "ingested")] += 1
    return {"final_exit": rc, "families": {f: dict(c) for f, c in sorted(per_family.items())},
            "vanished": sum(c["vanished"] for c in per_family.values()),
            "upload messages": dict(Counter(f for _, f in others)),
            "queue": depth(sqs, q), "dlq": depth(sqs, dlq), "crash": "Traceback" in text and rc != 0}


def main(argv=None) -> int:
    p = benchkit.parser(__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    k = sub.add_parser("kills", help="SIGKILL the job at random moments, then account for every row")
    k.add_argument("--kills", type=int, default=5)
    k.add_argument("--waves", type=int, default=4, help="waves of files: run k gets wave k while it starts; "
                   "later runs find a quiet queue")
    k.add_argument("--files", type=int, default=15, help="files per wave")
    k.add_argument("--seed", type=int, default=1)
    o = sub.add_parser("outage", help="freeze the local AWS stand-in mid-stream, then account for every row")
    o.add_argument("--seconds", type=float, default=60, help="how long S3, SQS and the state stop answering")
    o.add_argument("--waves", type=int, default=3, help="waves of files: the first before the freeze, the "
                   "second right before it, the rest after it")
    o.add_argument("--files", type=int, default=20, help="files per wave")
    sub.add_parser("fuzz", help="message bodies and bad files of many families, then account for each")
    for s in (k, o):
        s.add_argument("--cluster", action="store_true",
                       help=f"run the job on {CLUSTER_MASTER} (executors in JVMs of their own) instead of "
                            f"{LOCAL_MASTER}")
    for s in (k, o, sub.choices["fuzz"]):
        s.add_argument("--keep", help="keep checkpoints, tables and logs in this folder")
        s.add_argument("--json", action="store_true", help="print the account as JSON")
    args = p.parse_args(argv)
    if args.command == "kills" and (args.kills < 1 or args.waves < 1 or args.files < 1):
        p.error("--kills, --waves and --files must be at least 1")
    if args.command == "outage" and (args.seconds <= 0 or args.waves < 2 or args.files < 1):
        p.error("--seconds must be positive, --waves at least 2 (one before the freeze, one during it) and "
                "--files at least 1")
    master = CLUSTER_MASTER if getattr(args, "cluster", False) else LOCAL_MASTER
    with local_aws() as server, work_dir(args.keep) as work:
        if args.command in ("kills", "outage"):
            result = (run_kills(server.endpoint_url, work, args.kills, args.waves, args.files, args.seed, master)
                      if args.command == "kills" else
                      run_outage(server, work, args.seconds, args.waves, args.files, master))
            ok = (result["final_exit"] == 0 and result["rows_lost"] == 0 and result["rows_duplicated"] == 0
                  and result["rows_unexpected"] == 0 and result["queue"] == 0 and result["dlq"] == 0
                  and result.get("rode_through", True))
        else:
            result = run_fuzz(server.endpoint_url, work)
            ok = result["final_exit"] == 0 and result["vanished"] == 0 and result["queue"] == 0 \
                and not result["crash"]
        print(json.dumps(result, indent=None if args.json else 2))
        print("OK" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
