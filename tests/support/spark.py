"""Running the job with the current environment's own spark-submit, as a child process group."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from devtools.local_spark import (LOCAL_MASTER, ROOT, job_command, job_env, log_tail,  # noqa: F401
                                  private_spark_home, wait_for)


def pyspark_version() -> tuple[int, int]:
    import pyspark
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


EMR_SPARK = (4, 0)  # emr-spark-8.0.0 runs Spark 4.0.2

# `make test` runs the Spark tests twice, on the newest Spark and on EMR's. A test whose subject does not
# depend on the Spark version runs in one of the two passes only, to keep the suite short.
only_on_emr_spark = pytest.mark.skipif(pyspark_version() != EMR_SPARK,
                                       reason="version-independent; runs in make test's pass on EMR's Spark 4.0.2")
only_on_newest_spark = pytest.mark.skipif(pyspark_version() == EMR_SPARK,
                                          reason="version-independent; runs in make test's pass on the newest Spark")


class Job:
    """spark-submit in its own process group, so a kill takes the JVM and its Python workers too."""

    def __init__(self, args: list[str], log_path: Path, master: str = LOCAL_MASTER):
        self.log_path = log_path
        self._log = open(log_path, "ab")
        # A local cluster's executor logs go beside the job's log (spark-home/work/<app>/<executor>/stderr).
        home = private_spark_home(log_path.parent) if master != LOCAL_MASTER else None
        self.proc = subprocess.Popen(job_command(*args, master=master, home=home), env=job_env(home=home),
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"job did not finish within {timeout} s\n{self.tail()}") from None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        # Python workers may linger a moment after the JVM dies; they are in the same group.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._log.close()

    def tail(self, n: int = 80) -> str:
        return log_tail(self.log_path, n)

    @classmethod
    def run(cls, args: list[str], log_path: Path, timeout: float = 300, exit_code: int = 0) -> str:
        """Run the job to its end, which must be `exit_code`; its log."""
        job = cls(args, log_path)
        try:
            assert job.wait(timeout=timeout) == exit_code, job.tail()
        finally:
            job.kill()
        return log_path.read_text(errors="replace")


