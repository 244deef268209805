"""Pause points for kill tests, loaded by every Python process of a test job (the driver and Spark's
workers) because the test puts this folder on PYTHONPATH.

With S3SQS_PAUSE_AT=<point>:<batch id> and S3SQS_PAUSE_MARKER=<file>, the first process to reach the
point for that batch creates the marker file and sleeps, so the test can SIGKILL the job right there:
- write:  an executor has completed one data file of the batch and is still writing (no table commit);
- commit: the driver has committed the batch to the table, and Spark has not yet logged the batch as
          done (its commits/<batch> file).
- read:   (S3SQS_PAUSE_AT=read:<file name>) a task has handed Spark the first rows of the partition that
          holds that file, and Spark's own table writer is writing them (no table commit). Spark's writers
          run in the JVM, so the pause is in the source's read that feeds them.
- read-seq: (S3SQS_PAUSE_AT=read-seq:<n>) the same, for the partition holding the file the source numbered
          n (files are numbered in the order the queue hands them out, which a test cannot choose: with
          maxFilesPerTrigger=m, file m+1 is in batch 1 or later whatever that order).
S3SQS_PAUSE_AT may list several points, separated by commas (`read-seq:5,write:3`): each pauses once, and
the marker of the n-th one (from 0) is <S3SQS_PAUSE_MARKER>.<n> from the second on.
Nothing else changes; without the variables this file does nothing.
"""
import importlib.abc
import importlib.util
import os
import sys
import time

_SPECS = [s.strip() for s in os.environ.get("S3SQS_PAUSE_AT", "").split(",") if s.strip()]
_MARKER = os.environ.get("S3SQS_PAUSE_MARKER", "")


def marker(n: int) -> str:
    return _MARKER if n == 0 else f"{_MARKER}.{n}"


def _pause(point: str, batch_id: int) -> None:
    for n, spec in enumerate(_SPECS):
        want_point, _, want_batch = spec.partition(":")
        if point != want_point or str(batch_id) != want_batch:
            continue
        try:
            fd = os.open(marker(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue  # another process paused already, or a later attempt after the kill
        os.write(fd, f"{point}:{batch_id}:{os.getpid()}\n".encode())
        os.close(fd)
        time.sleep(600)
        return


def _patch_files(module) -> None:
    original = module._RollingFiles._close

    def _close(self, key):
        original(self, key)
        _pause("write", self.spec.batch_id)
    module._RollingFiles._close = _close


def _patch_stream(module) -> None:
    original = module.TableSink.__call__

    def __call__(self, batch_df, batch_id):
        original(self, batch_df, batch_id)
        _pause("commit", batch_id)
    module.TableSink.__call__ = __call__


def _patch_reader(module) -> None:
    original = module.read_partition

    def read_partition(files, *args, **kwargs):
        plain = [getattr(f, "file", f) for f in files]  # a piece of a big file names its file
        names = {f.uri.rsplit("/", 1)[-1] for f in plain}
        seqs = {f.seq for f in plain}
        for i, batch in enumerate(original(files, *args, **kwargs)):
            yield batch
            if i == 0:
                for name in names:
                    _pause("read", name)
                for seq in seqs:
                    _pause("read-seq", seq)
    module.read_partition = read_partition


_PATCHES = {"s3sqs.sinks.table_files": _patch_files, "s3sqs.sinks.stream": _patch_stream,
            "s3sqs.reading.reader": _patch_reader}


class _Finder(importlib.abc.MetaPathFinder):
    """Patches the sink modules right after they are first imported."""

    def find_spec(self, name, path, target=None):
        if name not in _PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            _PATCHES[name](module)
        loader.exec_module = exec_module
        return spec


if _SPECS and _MARKER:
    sys.meta_path.insert(0, _Finder())
