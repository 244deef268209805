"""Direct writes: a sink's data files (Delta, Iceberg, or the parquet sink's) written by the tasks that read
the rows.

Without a transform, nothing happens to the rows between the source's read and the sink's Parquet files,
so each read task writes them itself (sinks/table_files.write_partition, as a rebalanced write's tasks do)
and hands Spark one row per file (sinks/target.WRITTEN_FILES). The rows never cross into the JVM and back,
which is most of a batch's time otherwise. The table sink (sinks/stream.TableSink) commits a batch's files
(for the parquet sink: Spark's file sink log, sinks/file_sink_log.py) exactly as it commits a rebalanced
write's: a task or batch that fails leaves orphan files that no commit
names, and a replayed batch writes new ones under new names.

Format "s3-sqs-direct-write" is the s3-sqs source with two more options, set by `load` only: the write's
spec and the rows' schema. Its offsets, planning and reading are the source's own.
"""
from __future__ import annotations

import dataclasses
import json
import uuid

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.types import StructType

from ..planning.source import READER_MIXINS, S3SqsDataSource, S3SqsStreamReader
from ..sinks.write_spec import WriteSpec
from ..sinks.table_schema import table_arrow_schema
from ..sinks.target import WRITTEN_FILES, WRITTEN_FILES_ARROW

FORMAT_NAME = "s3-sqs-direct-write"
_SPEC, _ROWS_SCHEMA = "directWriteSpec", "directWriteRowsSchema"
# Spark sets it for every job of a micro-batch; the tasks see it, and name their files by it.
_BATCH_ID_PROPERTY = "streaming.sql.batchId"


def query_writer(spark, options: dict[str, str], df, sink):
    """The writer of the query `df` (the s3-sqs source with `options`) into `sink` (sinks.kinds.base.Sink),
    not yet started; the one place that decides who writes the sink's files: the read tasks when
    `sink.direct_writes` and the output allows it, else Spark's writer.

    Returns (writer, rows_of, refusal): `rows_of(batch id)`, the rows each batch committed, for a direct
    write only (Spark's count is then of its files); `refusal`, why the output is Spark's to write
    though the flags asked for direct writes (Sink.direct_write_refusal), else None."""
    refusal = sink.direct_write_refusal(df.schema) if sink.direct_writes else None
    if not sink.direct_writes or refusal:
        return sink.writer(df), None, refusal
    table = sink.direct_table(df.schema)
    return table.writer(load(spark, options, df.schema, table.spec)), table.sink.rows.get, None


def load(spark, options: dict[str, str], schema: StructType, spec: WriteSpec):
    """The stream of the files the read tasks write: the s3-sqs source's `options`, its rows' `schema`."""
    spark.dataSource.register(DirectWriteSource)
    return (spark.readStream.format(FORMAT_NAME).options(**options).option(_SPEC, spec.to_option())
            .option(_ROWS_SCHEMA, schema.json()).schema(WRITTEN_FILES).load())


class DirectWriteSource(S3SqsDataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def __init__(self, options):
        own = {k.lower(): v for k, v in options.items()}
        self.write_spec = WriteSpec.from_option(own[_SPEC.lower()])
        self.rows_schema = StructType.fromJson(json.loads(own[_ROWS_SCHEMA.lower()]))
        super().__init__({k: v for k, v in options.items() if k.lower() not in (_SPEC.lower(), _ROWS_SCHEMA.lower())})

    def schema(self):
        return WRITTEN_FILES

    def streamReader(self, schema: StructType) -> "DirectWriteReader":
        return DirectWriteReader(super().streamReader(self.rows_schema), self.write_spec, self.rows_schema)


class DirectWriteReader(DataSourceStreamReader, *READER_MIXINS):
    """The source's reader, whose tasks write what they read and yield the files."""

    def __init__(self, source: S3SqsStreamReader, spec: WriteSpec, rows_schema: StructType):
        self.source, self.spec = source, spec
        self.table_schema = table_arrow_schema(rows_schema, spec.table_format)

    def initialOffset(self) -> dict:
        return self.source.initialOffset()

    def getDefaultReadLimit(self):
        return self.source.getDefaultReadLimit()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        return self.source.latestOffset(start, limit)

    def reportLatestOffset(self) -> dict | None:
        return self.source.reportLatestOffset()

    def prepareForTriggerAvailableNow(self) -> None:
        self.source.prepareForTriggerAvailableNow()

    def partitions(self, start: dict, end: dict):
        return self.source.partitions(start, end)

    def commit(self, end: dict) -> None:
        self.source.commit(end)

    def read(self, partition):
        from pyspark import TaskContext

        from ..sinks.table_files import write_partition  # tasks only: the planning processes never write

        ctx = TaskContext.get()
        # Spark's task attempt id: unique in the application, so a retried task never reuses a name.
        task, attempt = (ctx.partitionId(), ctx.taskAttemptId()) if ctx else (0, 0)
        batch = ctx.getLocalProperty(_BATCH_ID_PROPERTY) if ctx else None
        spec = dataclasses.replace(self.spec, batch_id=int(batch) if batch else partition.batch_end,
                                   write_id=uuid.uuid4().hex[:12])
        files = write_partition(self.source.read(partition), spec, self.table_schema, task, attempt)
        if files:
            yield pa.RecordBatch.from_pylist([f.to_row() for f in files], schema=WRITTEN_FILES_ARROW)
