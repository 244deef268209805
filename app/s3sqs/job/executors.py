"""The live executor cores, read from the SparkContext on the driver and kept in a local file for the
source, which plans each batch in a process of its own and sizes the batch's partitions from it
(planning/slots.py, option executorCoresFile)."""
from __future__ import annotations

import logging
import os
import tempfile
import threading
import time

from ..planning.slots import LiveCores

log = logging.getLogger("s3sqs.job")
REFRESH_SECONDS = 1.0


def live_cores(spark) -> LiveCores:
    """The cores of the active executors, from Spark's status store (what the UI's executors page shows).
    In local mode the driver is the executor and has the cores; on a cluster the driver has none."""
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)  # active ones only
    cores = executors = 0
    for i in range(summaries.size()):
        s = summaries.apply(i)
        cores += int(s.totalCores())
        executors += s.id() != "driver"
    return LiveCores(cores, executors, time.time())


class ExecutorCoresFile:
    """A daemon thread that rewrites the figure (atomically: a new file renamed over the old) every
    REFRESH_SECONDS while the job runs, at `path` (a new temporary file by default)."""

    def __init__(self, spark, path: str | None = None):
        self.spark = spark
        if path is None:
            fd, path = tempfile.mkstemp(prefix="s3sqs-executor-cores-", suffix=".json")
            os.close(fd)
            os.unlink(path)  # absent until the first figure: the source then falls back
        self.path = path
        self.last: LiveCores | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="s3sqs-executor-cores", daemon=True)

    def start(self) -> "ExecutorCoresFile":
        self.refresh()  # the first figure before the query plans anything
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(REFRESH_SECONDS * 5)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def refresh(self) -> LiveCores:
        live = live_cores(self.spark)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(live.encode())
        os.replace(tmp, self.path)
        if self.last is None or (live.cores, live.executors) != (self.last.cores, self.last.executors):
            where = f"{live.executors} executors" if live.executors else "the driver: local mode"
            print(f"[job] executor cores: {live.cores} ({where}); batches are packed into at least as many "
                  "partitions", flush=True)
        self.last = live
        return live

    def _run(self) -> None:
        failures = 0
        while not self._stop.wait(REFRESH_SECONDS):
            try:
                self.refresh()
                failures = 0
            except Exception as e:  # the SparkContext stopping, a full disk: the source falls back meanwhile
                failures += 1
                if failures in (1, 10) or failures % 100 == 0:
                    log.warning("could not refresh the live executor cores (%d times in a row): %s", failures, e)
