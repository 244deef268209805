"""The processes of a local Spark job, found through /proc (Linux): which are the executors' JVMs and the
Python workers of a local-cluster run, so that a test or the chaos script can kill exactly one of them."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable

EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"
PYTHON_DAEMON = "pyspark.daemon"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after "pid (comm)": state, parent, process group, ..."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone meanwhile
        return None
    return stat[stat.rindex(")") + 2:].split()


def parent(pid: int) -> int | None:
    fields = _stat(pid)
    return None if fields is None else int(fields[1])


def group(pgid: int) -> list[int]:
    """Every live process of a process group (a job started with start_new_session: its id is the group's).
    A group outlives its leader: executors whose driver died are still found here."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return sorted(out)


def executor_jvms(pgid: int) -> list[int]:
    """The executor JVMs of the job whose process group is `pgid`."""
    return [p for p in group(pgid) if EXECUTOR_CLASS in _cmdline(p)]


def descendants(root: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            up = parent(int(entry))
            if up is not None:
                kids.setdefault(up, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def python_workers(pgid: int) -> list[int]:
    """The Python workers of that job's executors: processes forked from a pyspark.daemon (they keep its
    command line), not the daemons themselves. A daemon puts itself and its workers in a process group
    of their own, so they are found under the executor JVMs, not in the job's group."""
    out = []
    for jvm in executor_jvms(pgid):
        for p in descendants(jvm):
            up = parent(p)
            if PYTHON_DAEMON in _cmdline(p) and up is not None and PYTHON_DAEMON in _cmdline(up):
                out.append(p)
    return sorted(out)


def executor_of(pid: int) -> int | None:
    """The executor JVM a process (a Python worker) runs under, or None if it runs under none."""
    p: int | None = pid
    while p and p > 1:
        if EXECUTOR_CLASS in _cmdline(p):
            return p
        p = parent(p)
    return None


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie has died; its parent has not reaped it yet


def reap(pid: int) -> None:
    """Collect a child's exit status, if `pid` is this process's child (the tests start servers and runs
    in-process); a dead child not reaped stays a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def terminate(kill: Callable[[int], None], alive: Callable[[], bool], timeout: float,
              reap: Callable[[], None] = lambda: None) -> None:
    """SIGTERM through `kill`, up to `timeout` seconds for `alive` to say it went, then SIGKILL. `reap` collects
    the exit status of a child of this process, which would otherwise stay a zombie."""
    kill(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive() and time.monotonic() < deadline:
        reap()
        time.sleep(0.1)
    if alive():
        kill(signal.SIGKILL)
        reap()
