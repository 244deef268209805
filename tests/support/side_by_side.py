"""Jobs run side by side, one per table format: `runs` maps each format to (the job's arguments, its work
folder). Each job is killed (SIGKILL to its process group) on the way out, whatever happened."""
from __future__ import annotations

import os

from tests.support.spark import ROOT, Job, wait_for

FAULTS = str(ROOT / "tests" / "support" / "faults")


def kill_at_pause_points(runs: dict, points: dict[str, str], monkeypatch) -> dict[str, str]:
    """Start each job with its pause point (S3SQS_PAUSE_AT, tests/support/faults) and SIGKILL it as soon as it
    gets there; what each one's marker says."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([FAULTS, os.environ.get("PYTHONPATH", "")]))
    jobs, said = {}, {}
    try:
        for fmt, (args, work) in runs.items():
            monkeypatch.setenv("S3SQS_PAUSE_AT", points[fmt])
            monkeypatch.setenv("S3SQS_PAUSE_MARKER", str(work / "paused"))
            jobs[fmt] = Job(args, work / "run1.log")
        for fmt, job in jobs.items():
            marker = runs[fmt][1] / "paused"
            assert wait_for(marker.exists, timeout=240, interval=0.05), job.tail()
            job.kill()  # SIGKILL to the whole process group, JVM and Python workers, at the pause point
            said[fmt] = marker.read_text()
    finally:
        for job in jobs.values():
            job.kill()
        monkeypatch.undo()  # PYTHONPATH back as it was (removed, the restart would import the installed copy)
    return said


def run_to_the_end(runs: dict, log_name: str, extra=()) -> dict[str, str]:
    """Run every job with `extra` arguments until it exits, which must be with 0; each one's log."""
    jobs = {fmt: Job(args + list(extra), work / log_name) for fmt, (args, work) in runs.items()}
    try:
        for job in jobs.values():
            assert job.wait(timeout=300) == 0, job.tail()
    finally:
        for job in jobs.values():
            job.kill()
    return {fmt: (work / log_name).read_text(errors="replace") for fmt, (_, work) in runs.items()}
