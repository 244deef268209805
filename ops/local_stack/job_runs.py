"""Job runs on the local stack: the packaged job started as EMR would start it, its state, logs and cancelling.

Each run has a folder under the state directory (.local-stack/runs/<run id>/): the archives unpacked where EMR
unpacks them for the driver (`work/`), the driver's stdout ([job] lines, as `job-runs logs` shows them on AWS)
and stderr (Spark's log), the process group's PID, and its exit code once it ends. A run is a process group of
its own, so cancelling or `local-stack stop` ends the driver and every Python worker it started.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from devtools import jars, processes
from ops.local_stack import LocalStackError
from ops.local_stack.emr_locally import EMR_SPARK, driver_environment, local_command
from ops.packaging.target import CONNECTOR_ARCHIVE_ALIAS, ENV_ARCHIVE_ALIAS

ROOT = Path(__file__).resolve().parents[2]
EMR_SPARK_VENV = ROOT / ".venv-spark40"
STARTED = re.compile(r"^\[job\] query .* started: ")
# What `job-runs` says of an EMR run, for the same moments of a local one.
RUNNING, PENDING, SUCCESS, FAILED, CANCELLED = "RUNNING", "PENDING", "SUCCESS", "FAILED", "CANCELLED"


class RunPaths:
    """The files of run `run_id` under the state directory `state_dir`."""

    def __init__(self, state_dir: Path, run_id: str) -> None:
        self.run_id = run_id
        self.root = (Path(state_dir) / "runs" / run_id).absolute()  # the driver runs in work/
        self.work = self.root / "work"
        self.stdout = self.root / "stdout"
        self.stderr = self.root / "stderr"
        self.pid = self.root / "pid"
        self.exit_code = self.root / "exit-code"
        self.cancelled = self.root / "cancelled"
        self.meta = self.root / "run.json"


def emr_spark_home() -> Path:
    """EMR's Spark (PySpark 4.0.2, in .venv-spark40) and Hadoop's S3A jars, or the make target that sets them up."""
    homes = sorted(EMR_SPARK_VENV.glob("lib/python3*/site-packages/pyspark"))
    version = _pyspark_version(homes[0]) if homes else None
    if version != EMR_SPARK or not jars.available("s3a"):
        have = f"found PySpark {version} in {EMR_SPARK_VENV}" if version else f"no PySpark in {EMR_SPARK_VENV}"
        raise LocalStackError(f"run-job runs the job on EMR's Spark {EMR_SPARK} with Hadoop's S3 filesystem "
                              f"({have}{'' if jars.available('s3a') else ', no S3A jars'}): run `make local-spark` "
                              "once (about 900 MB)")
    return homes[0]


def _pyspark_version(home: Path) -> str | None:
    m = re.search(r'__version__[^"\']*["\']([^"\']+)', (home / "version.py").read_text()) if (home / "version.py").exists() else None
    return m.group(1) if m else None


def check_machine(manifest: dict) -> None:
    """The packaged environment holds wheels for the stack's architecture; it runs here only on the same one, and
    its interpreter is the one package-job linked it to."""
    arch = manifest["target"]["arch"]
    if platform.machine().lower() not in (arch, {"x86_64": "amd64", "aarch64": "arm64"}.get(arch)):
        raise LocalStackError(f"dist/ is built for {arch}, this machine is {platform.machine()}: run "
                              f"package-job --arch {platform.machine()} for a local run")
    python = Path(manifest["target"]["python_home"]) / f"python{manifest['target']['python']}"
    if not python.exists():
        raise LocalStackError(f"dist/'s environment runs {python}, which this machine does not have; run "
                              "package-job with --python-home naming the folder of a Python "
                              f"{manifest['target']['python']} here")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise LocalStackError("Spark needs Java 17: install it, or set JAVA_HOME")


def new_run_id(consumer: str) -> str:
    return f"local-{consumer}-{time.strftime('%Y%m%d-%H%M%S')}"


def start(state_dir: Path, run_id: str, request: dict, dist: Path, manifest: dict, local_paths: dict[str, str],
          endpoint_url: str, region: str, checkpoint: str | None) -> RunPaths:
    """Unpack the archives for the driver, then start spark-submit as a process group of its own."""
    home = emr_spark_home()
    paths = RunPaths(state_dir, run_id)
    paths.work.mkdir(parents=True)
    with tarfile.open(dist / manifest["environment"]) as tar:
        tar.extractall(paths.work / ENV_ARCHIVE_ALIAS, filter="tar")
    with zipfile.ZipFile(dist / manifest["connector"]) as zf:
        zf.extractall(paths.work / CONNECTOR_ARCHIVE_ALIAS)
    command = local_command(home, request, local_paths, endpoint_url, region)
    env = driver_environment(request, home, dict(os.environ))
    paths.meta.write_text(json.dumps({"runId": run_id, "name": request.get("name"), "checkpoint": checkpoint,
                                      "command": command}, indent=1) + "\n")
    # sh records the exit code beside the logs; the group (sh, spark-submit's JVM, Python workers) is the run.
    script = 'exec >"$1" 2>"$2"; shift 3; "$@"; echo $? > "$0.tmp" && mv "$0.tmp" "$0"'
    proc = subprocess.Popen(["/bin/sh", "-c", script, str(paths.exit_code), str(paths.stdout), str(paths.stderr),
                             "--", *command], cwd=paths.work, env=env, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    paths.pid.write_text(f"{proc.pid}\n")
    return paths


def state(paths: RunPaths) -> str:
    """The run's state, in EMR's words."""
    if paths.exit_code.exists():
        return SUCCESS if paths.exit_code.read_text().strip() == "0" else FAILED
    if _alive(paths):
        return RUNNING if started(paths) else PENDING
    return CANCELLED if paths.cancelled.exists() else FAILED


def started(paths: RunPaths) -> bool:
    return any(STARTED.match(line) for line in _lines(paths.stdout))


def _alive(paths: RunPaths) -> bool:
    """Whether any process of the run's group still runs (zombies, which nobody may have reaped, do not)."""
    try:
        group = int(paths.pid.read_text())
        os.killpg(group, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        return False
    return bool(processes.group(group)) if Path("/proc").is_dir() else True


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.exists() else []


def wait(paths: RunPaths, until_running: bool, say: Callable[[str], None], poll: float = 0.5) -> str:
    """Print the driver's [job] lines as they come, until the query runs (`until_running`) or the run ends."""
    shown, last_note, begun = 0, time.monotonic(), time.monotonic()
    while True:
        lines = _lines(paths.stdout)
        for line in lines[shown:]:
            say(f"  {line}")
        shown = len(lines)
        now = state(paths)
        if now in (SUCCESS, FAILED, CANCELLED) or (until_running and now == RUNNING):
            return now
        if time.monotonic() - last_note >= 15:
            say(f"  … {now.lower()}, {time.monotonic() - begun:.0f} s (Spark's log: {paths.stderr})")
            last_note = time.monotonic()
        time.sleep(poll)


def why_failed(paths: RunPaths, lines: int = 12) -> str:
    """The driver's last words: its error lines if it printed any, else the end of Spark's log."""
    err = _lines(paths.stderr)
    mine = [ln for ln in err if ln.startswith("job.py:")]
    return "\n".join(mine[-3:] or err[-lines:])


def find(state_dir: Path, run_id: str) -> RunPaths:
    paths = RunPaths(state_dir, run_id)
    if not paths.meta.exists():
        known = ", ".join(p.name for p in runs(state_dir)) or "none yet"
        raise LocalStackError(f"no local job run {run_id!r} in {Path(state_dir) / 'runs'} (runs: {known})")
    return paths


def runs(state_dir: Path) -> list[Path]:
    folder = Path(state_dir) / "runs"
    return sorted(p for p in folder.iterdir() if (p / "run.json").exists()) if folder.exists() else []


def live_on_checkpoint(state_dir: Path, checkpoint: str | None) -> list[str]:
    """The runs still going on `checkpoint`: a second run there would take the first one's batches."""
    out = []
    for folder in runs(state_dir):
        paths = RunPaths(state_dir, folder.name)
        if json.loads(paths.meta.read_text()).get("checkpoint") == checkpoint and state(paths) in (RUNNING, PENDING):
            out.append(folder.name)
    return out


def cancel(paths: RunPaths, timeout: float = 30) -> bool:
    """End the run's process group (SIGTERM, then SIGKILL after `timeout`); False when it had ended already."""
    if not _alive(paths):
        return False
    paths.cancelled.touch()
    group = int(paths.pid.read_text())
    processes.terminate(lambda sig: os.killpg(group, sig), lambda: _alive(paths), timeout, lambda: processes.reap(group))
    return True


def follow(paths: RunPaths, stream: str, keep_going: bool, poll: float = 0.5) -> Iterator[str]:
    """The lines of the driver's `stream` (stdout or stderr); with `keep_going`, new ones until the run ends."""
    path = paths.stdout if stream == "stdout" else paths.stderr
    shown = 0
    while True:
        going = keep_going and state(paths) in (RUNNING, PENDING)  # read after: the last lines come before the end
        lines = _lines(path)
        yield from lines[shown:]
        shown = len(lines)
        if not going:
            return
        time.sleep(poll)
