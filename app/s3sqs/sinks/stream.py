"""The per-batch protocol of the table sinks, and the table a direct write's read tasks write into.

For Delta and Iceberg, and the parquet sink's direct writes, Spark's foreachBatch calls `TableSink` on the
driver with each micro-batch:
1. If the table already holds this batch for this query (Spark replays the last batch after a crash
   that came after the table commit), do nothing.
2. Rebalance the rows by partition value into partitions of about the target file size (Spark's
   adaptive execution measures the shuffled bytes), and let the executors write them as Parquet files
   (table_files.py). In a direct write (no --transform: job/direct_write.py) the read tasks have written
   them as they read, and the batch's rows are the files. Nothing is visible to readers yet: a crash here
   leaves orphan files only.
3. Commit all the batch's files to the table in one transaction that also records (query id, batch id);
   for the parquet sink, in the batch's entry of Spark's file sink log (file_sink_log.py).
Spark writes its own commit log for the batch only after this returns.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import uuid

from typing import TYPE_CHECKING

from .table_files import FORMAT_NAME, WriteSpec, read_handoff
from .table_schema import check_partitioning, table_arrow_schema
from .target import TableTarget, WrittenFile

if TYPE_CHECKING:
    from .kinds.base import Sink

log = logging.getLogger("s3sqs.sinks")
# Spark sets this local property for every job of a streaming query; it survives restarts from the
# same checkpoint, and a new checkpoint gets a new one (so its batch ids, restarting at 0, are new too).
QUERY_ID_PROPERTY = "sql.streaming.queryId"


class DirectTable:
    """A table whose data files the source's read tasks write (job/direct_write.py): what they write by
    (`spec`; each task fills in its batch and write id), and the foreachBatch function that commits the
    files (`sink`)."""

    def __init__(self, schema, sink: Sink):
        target = open_table(schema, sink)
        self.spec = WriteSpec(table_format=sink.kind, location=target.write_location.uri,
                              partition_by=sink.partition_by, target_file_size=sink.target_file_size,
                              batch_id=-1, write_id="", handoff="", endpoint=sink.endpoint)
        self.sink = TableSink(target, sink, direct=True)

    def writer(self, df):
        return df.writeStream.foreachBatch(self.sink)


def open_table(schema, sink: Sink) -> TableTarget:
    """The sink's table, created or checked against the output's Spark schema and partitioning."""
    check_partitioning(schema, sink.partition_by)
    target = sink.open_target()
    target.ensure(table_arrow_schema(schema, sink.kind))
    return target


class TableSink:
    """foreachBatch function of the Delta and Iceberg sinks, and of the parquet sink's direct writes."""

    def __init__(self, target: TableTarget, sink: Sink, direct: bool = False):
        self.target, self.sink, self.direct = target, sink, direct
        self.rows: dict[int, int] = {}  # batch id -> rows committed (a direct write's batch rows are files)
        self.handoff_dir = tempfile.mkdtemp(prefix="s3sqs-sink-")
        atexit.register(shutil.rmtree, self.handoff_dir, True)

    def __call__(self, batch_df, batch_id: int) -> None:
        query_id = batch_df.sparkSession.sparkContext.getLocalProperty(QUERY_ID_PROPERTY)
        if not query_id:
            raise RuntimeError(f"Spark did not set {QUERY_ID_PROPERTY} for batch {batch_id}; the table sink "
                               "needs the query id to commit exactly once")
        last = self.target.committed_batch(query_id)
        if batch_id <= last:
            log.info("batch %d is already in %s (committed before a restart); skipping it", batch_id,
                     self.sink.describe())
            return
        files = self.write_files(batch_df, batch_id)
        if not files:
            log.info("batch %d has no rows to write", batch_id)
            return
        self.target.commit(files, query_id, batch_id)
        self.rows[batch_id] = sum(f.rows for f in files)
        log.info("batch %d: %d rows in %d file(s), %d bytes, committed to %s", batch_id, self.rows[batch_id],
                 len(files), sum(f.size for f in files), self.sink.describe())

    def write_files(self, batch_df, batch_id: int) -> list[WrittenFile]:
        if self.direct:  # the read tasks write the files as they read; the batch's rows are those files
            return [WrittenFile.from_row(r.asDict()) for r in batch_df.collect()]
        session = batch_df.sparkSession
        for key, value in adaptive_settings(self.sink.target_file_size).items():
            session.conf.set(key, value)
        spec = WriteSpec(
            table_format=self.sink.kind, location=self.target.write_location.uri,
            partition_by=self.sink.partition_by, target_file_size=self.sink.target_file_size, batch_id=batch_id,
            write_id=uuid.uuid4().hex[:12],
            handoff=os.path.join(self.handoff_dir, f"batch-{batch_id}.json"),
            endpoint=self.sink.endpoint)
        rows = batch_df.hint("rebalance", *self.sink.partition_by)
        rows.write.format(FORMAT_NAME).mode("append").option("spec", spec.to_option()).save()
        try:
            return read_handoff(spec.handoff)
        except FileNotFoundError:
            raise RuntimeError(f"the write of batch {batch_id} finished without reporting its files") from None
        finally:
            if os.path.exists(spec.handoff):
                os.remove(spec.handoff)


def adaptive_settings(target_file_size: int) -> dict[str, str]:
    """Spark turns adaptive execution off inside streaming queries (4.0); the batch write in
    foreachBatch is an ordinary batch job, where it can size the rebalanced partitions by the bytes
    actually shuffled. parallelismFirst=false makes it honour the advisory size rather than keep one
    partition per core."""
    return {
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(target_file_size),
    }
