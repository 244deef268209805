"""Running app/job.py with this environment's own PySpark, as the demo, benchmarks and tests do."""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from devtools.local_aws import FAKE_ENV

ROOT = Path(__file__).resolve().parents[1]


def spark_home() -> Path:
    """The pip-installed PySpark distribution (located, not imported)."""
    return Path(importlib.util.find_spec("pyspark").origin).parent


# The benchmarks' PySparks (make setup builds both): 4.3 in .venv, EMR's 4.0.2 in .venv-spark40.
BENCH_SPARKS = {"4.3": ROOT / ".venv" / "bin" / "python", "4.0.2": ROOT / ".venv-spark40" / "bin" / "python"}


def sparks_of(parser, text: str) -> list[str]:
    """--spark's comma-separated PySparks, each one set up here, or the parser's error."""
    sparks = [s for s in text.split(",") if s]
    for s in sparks:
        if s not in BENCH_SPARKS or not BENCH_SPARKS[s].exists():
            parser.error(f"--spark: {s!r} is not set up here; choose from {', '.join(BENCH_SPARKS)} "
                         f"(make setup builds both)")
    return sparks


LOCAL_MASTER = "local[2]"
# Two executor JVMs of one core and 1 GiB each, started by Spark itself from the pip-installed PySpark
# beside the driver's JVM: tasks, their retries and the source's partitions cross JVMs, as on EMR.
CLUSTER_MASTER = "local-cluster[2,1,1024]"


def cluster_conf(master: str = CLUSTER_MASTER) -> dict[str, str]:
    """What a local-cluster run needs besides its master: the executors' JVMs get the lean JIT and GC the
    tests give the driver's (SPARK_SUBMIT_OPTS reaches the driver only; these JVMs live for minutes), and
    the first job waits until every executor has registered (YARN and Kubernetes wait for most by
    default, a standalone cluster only when it knows the cores to expect), so the warm-up reaches each."""
    m = re.fullmatch(r"local-cluster\[(\d+),\s*(\d+),\s*(\d+)\]", master.replace(" ", ""))
    if not m:
        raise ValueError(f"not a local-cluster master: {master!r}; write it as local-cluster[2,1,1024] "
                         "(executors, cores each, MiB each)")
    executors, cores = int(m.group(1)), int(m.group(2))
    # The driver binds to loopback; it must say so to its executors, not name the host's other address.
    return {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.cores.max": str(executors * cores), "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s"}


def private_spark_home(base: Path, home: Path | None = None) -> Path:
    """A Spark home under `base` made of links to the parts of the pip-installed one (`home`), with a
    `work` folder of its own. A local cluster's worker puts each executor's folder and logs under
    SPARK_HOME/work, which nothing configures for local-cluster: this keeps them out of the virtualenv,
    beside the run that made them."""
    home = Path(home or spark_home())
    private = Path(base) / "spark-home"
    (private / "work").mkdir(parents=True, exist_ok=True)
    for entry in home.iterdir():
        link = private / entry.name
        if entry.name != "work" and not link.exists():
            link.symlink_to(entry)
    return private


def job_command(*args: str, conf: dict[str, str] | None = None, python: Path | None = None,
                master: str = LOCAL_MASTER, home: Path | None = None) -> list[str]:
    """spark-submit of app/job.py in local mode (or on `master`, e.g. CLUSTER_MASTER, with cluster_conf()),
    with this environment's PySpark or that of the venv whose `python` is given (or the Spark `home` given,
    as private_spark_home makes one: pass job_env the same); with `--table-writer spark`, Spark's Delta or
    Iceberg jars (fetched by make setup) go on the classpath, as EMR puts its bundled ones there."""
    settings = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                **(cluster_conf(master) if master.startswith("local-cluster") else {}),
                **table_writer_conf(args), **(conf or {})}
    home = home or (spark_home() if python is None else venv_spark_home(python))
    return [str(home / "bin" / "spark-submit"), "--master", master,
            *(a for k, v in settings.items() for a in ("--conf", f"{k}={v}")),
            str(ROOT / "app" / "job.py"), *args]


def flag_value(args, flag: str) -> str | None:
    args = list(args)
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def table_writer_conf(args) -> dict[str, str]:
    """The local jars of Spark's table writer the job's flags ask for; none for the python writer."""
    from devtools import jars

    sink = (flag_value(args, "--sink") or "").lower()
    if (flag_value(args, "--table-writer") or "").lower() != "spark" or sink not in ("delta", "iceberg"):
        return {}
    conf = {"spark.jars": ",".join(str(p) for p in jars.paths(sink))}
    if sink == "delta":
        # Delta reads its log with 50 partitions by default: on a 2-core local run that is most of a batch.
        conf["spark.databricks.delta.snapshotPartitions"] = "2"
    return conf


def venv_spark_home(python: Path) -> Path:
    """Another venv's PySpark distribution: make setup links it as VENV/bin/spark-distribution."""
    return (Path(python).parent / "spark-distribution").resolve()


def job_env(python: Path | None = None, home: Path | None = None) -> dict[str, str]:
    """The current environment plus fake credentials for the local stand-in, and this Python (or the
    given venv's) for the driver and workers; SPARK_HOME is `home` when given."""
    py = str(python or sys.executable)
    home = home or (spark_home() if python is None else venv_spark_home(python))
    return {**os.environ, **FAKE_ENV, "SPARK_HOME": str(home), "PYSPARK_PYTHON": py,
            "PYSPARK_DRIVER_PYTHON": py, "SPARK_LOCAL_IP": "127.0.0.1"}


def wait_for(predicate, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until it holds (True) or `timeout` seconds pass (False)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def wait_for_rows(query, expected: int, what: str, poll: float = 0.05, rows_of=None) -> tuple[int, int]:
    """Wait until a streaming query's batches hold `expected` rows; (rows, batches with rows). A benchmark's
    clock: it stops the process with the query's error if the query fails first. `rows_of(batch id)`: a
    batch's rows where Spark's count of its input rows is not them (a direct write's rows are its files)."""
    import time
    seen, rows = set(), 0
    while rows < expected:
        if query.exception():
            raise SystemExit(f"{what} failed: {query.exception()}")
        for p in query.recentProgress:
            if p["batchId"] not in seen and p["numInputRows"]:
                seen.add(p["batchId"])
                rows += (rows_of(p["batchId"]) or 0) if rows_of else p["numInputRows"]
        time.sleep(poll)
    return rows, len(seen)


def log_tail(path: Path, lines: int = 25) -> str:
    """The last `lines` lines of a run's log, indented, for a failure message: a benchmark's temporary
    folder, the log with it, is gone once it exits."""
    try:
        text = Path(path).read_text(errors="replace").rstrip().splitlines()[-lines:]
    except OSError as e:
        return f"    (the log {path} cannot be read: {e})"
    return "\n".join(f"    {line}" for line in text)
