"""Executor side of the table sinks: a Python data source writer ("s3sqs-table-files") that writes a
micro-batch's rows as Parquet files under the table's location and reports each file to the driver.

Spark runs `write` in a task per partition; each task splits its rows by partition value and rolls to a
new file when one reaches the target size. Nothing here touches the table's log or catalog: a file is
part of the table only once the driver commits it, so files of a failed or killed attempt are orphans
that no reader sees. `commit` runs on the driver once every task has succeeded and hands the list of
files to the job's process through a local file (`handoff`).
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from ..core.endpoint import ensure_parent
from ..core.units import now_ms
from .paths import (data_file_name, escape_path_segment, partition_path, partition_string,
                    spark_escape_path_segment, split_by_keys)
from .stats import FileStats
from .table_schema import file_schema, fit_to, table_arrow_schema
from .target import WrittenFile
from .write_spec import WriteSpec

FORMAT_NAME = "s3sqs-table-files"
# Rows are buffered per partition value and written as one row group when this much Arrow data is
# waiting; the file is closed once its encoded size reaches the target.
MAX_ROW_GROUP_BYTES = 64 << 20
MAX_BUFFERED_BYTES = 256 << 20
log = logging.getLogger("s3sqs.sinks")


class TableFilesDataSource(DataSource):
    """Registered by the table sinks; used only by them, as `df.write.format("s3sqs-table-files")`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def writer(self, schema, overwrite: bool) -> "TableFilesWriter":
        return TableFilesWriter(WriteSpec.from_option(self.options["spec"]), schema)


@dataclass
class FilesWritten(WriterCommitMessage):
    files: list = field(default_factory=list)  # WrittenFile.to_json() of each file


class TableFilesWriter(DataSourceArrowWriter):
    def __init__(self, spec: WriteSpec, schema):
        self.spec = spec
        self.table_schema = table_arrow_schema(schema, spec.table_format)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> FilesWritten:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        # Spark's task attempt id, not the attempt number: that starts again at 0 when the stage is run
        # again (a lost executor's shuffle output), and the new attempt would reuse the lost one's names.
        task, attempt = (ctx.partitionId(), ctx.taskAttemptId()) if ctx else (0, 0)
        files = write_partition(iterator, self.spec, self.table_schema, task, attempt)
        return FilesWritten([f.to_json() for f in files])

    def commit(self, messages: list) -> None:
        files = [f for m in messages if m is not None for f in m.files]
        hand_off(self.spec.handoff, files)

    def abort(self, messages: list) -> None:
        orphans = [f["uri"] for m in messages if m is not None for f in m.files]
        if orphans:
            # Not part of the table; a later write of the same batch uses new names.
            log.warning("batch %d write %s failed; %d data file(s) written by finished tasks are not part of "
                        "the table: %s", self.spec.batch_id, self.spec.write_id, len(orphans), orphans[:5])


def hand_off(path: str, files: list[dict]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(files, f)
    os.replace(tmp, path)


def read_handoff(path: str) -> list[WrittenFile]:
    with open(path) as f:
        return [WrittenFile.from_json(d) for d in json.load(f)]


def write_partition(batches: Iterable[pa.RecordBatch], spec: WriteSpec, table_schema: pa.Schema,
                    task: int, attempt: int) -> list[WrittenFile]:
    """Write one task's rows; returns the files, each closed and complete."""
    fs, base = spec.target.filesystem()
    files = _RollingFiles(fs, base, spec, table_schema, task, attempt)
    try:
        for batch in batches:
            table = fit_to(batch, table_schema)
            for key, rows in split_by_keys(table, spec.partition_by):
                files.add(key, rows)
        return files.finish()
    except BaseException:
        files.abandon()
        raise


@dataclass
class _OpenFile:
    relative_path: str
    partition: dict
    stream: object
    writer: pq.ParquetWriter
    stats: FileStats | None
    rows: int = 0


class _RollingFiles:
    def __init__(self, fs, base: str, spec: WriteSpec, table_schema: pa.Schema, task: int, attempt: int):
        self.fs, self.base, self.spec, self.task, self.attempt = fs, base, spec, task, attempt
        self.schema = file_schema(table_schema, spec.partition_by, spec.table_format)
        self.row_group_bytes = min(spec.target_file_size, MAX_ROW_GROUP_BYTES)
        self.buffers: dict[tuple, list[pa.Table]] = {}
        self.buffered: dict[tuple, int] = {}
        self.open: dict[tuple, _OpenFile] = {}
        self.done: list[WrittenFile] = []
        self.seq = 0

    def add(self, key: tuple, rows: pa.Table) -> None:
        self.buffers.setdefault(key, []).append(rows)
        self.buffered[key] = self.buffered.get(key, 0) + rows.nbytes
        if self.buffered[key] >= self.row_group_bytes:
            self._flush(key)
        while sum(self.buffered.values()) > MAX_BUFFERED_BYTES:
            self._flush(max(self.buffered, key=self.buffered.get))

    def finish(self) -> list[WrittenFile]:
        for key in list(self.buffers):
            self._flush(key)
        for key in list(self.open):
            self._close(key)
        return self.done

    def abandon(self) -> None:
        for f in self.open.values():
            try:
                f.writer.close()
                f.stream.close()
            except Exception as e:  # the task is failing anyway; the partial file is an orphan
                log.warning("could not close partial file %s: %s", f.relative_path, e)
        self.open.clear()

    def _flush(self, key: tuple) -> None:
        table = pa.concat_tables(self.buffers.pop(key))
        self.buffered.pop(key)
        f = self.open.get(key) or self._open(key)
        data = table.select(self.schema.names)
        f.writer.write_table(data, row_group_size=max(data.num_rows, 1))
        f.rows += data.num_rows
        if f.stats is not None:
            f.stats.update(data)
        if f.stream.tell() >= self.spec.target_file_size:
            self._close(key)

    def _open(self, key: tuple) -> _OpenFile:
        values = tuple(partition_string(v) for v in key)
        # Spark's file sink: its readers take the values from the folder names.
        escape = spark_escape_path_segment if self.spec.table_format == "parquet" else escape_path_segment
        folder = partition_path(self.spec.partition_by, values, escape)
        name = data_file_name(self.spec.batch_id, self.spec.write_id, self.task, self.attempt, self.seq)
        self.seq += 1
        rel = f"{folder}/{name}" if folder else name
        path = f"{self.base}/{rel}"
        ensure_parent(self.fs, path)
        stream = self.fs.open_output_stream(path)
        writer = pq.ParquetWriter(stream, self.schema, compression="zstd")
        stats = FileStats(self.schema) if self.spec.table_format == "delta" else None
        f = _OpenFile(rel, dict(zip(self.spec.partition_by, values)), stream, writer, stats)
        self.open[key] = f
        return f

    def _close(self, key: tuple) -> None:
        f = self.open.pop(key)
        f.writer.close()
        size = f.stream.tell()
        f.stream.close()  # on S3 this completes the upload: the object exists only now
        self.done.append(WrittenFile(
            uri=self.spec.target.join(f.relative_path), relative_path=f.relative_path, size=size, rows=f.rows,
            partition=f.partition, stats=f.stats.to_json() if f.stats else "",
            modification_time_ms=now_ms()))
