"""A batch data source that reads nothing: reading it starts the executors' Python workers with the stream
reader's modules imported (and what its file format's reader imports when it reads: `warm()`), so the
stream's first tasks find them warm. The job reads it before the query starts (`warm_python_workers`)."""
from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "s3sqs-warm-up"


class WarmUpDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return "id LONG"

    def reader(self, schema) -> "WarmUpReader":
        return WarmUpReader(int(self.options.get("partitions", "2")), self.options.get("fileFormat"))


class WarmUpReader(DataSourceReader):
    def __init__(self, partitions: int, file_format: str | None = None):
        self.n, self.file_format = partitions, file_format

    def partitions(self):
        return [InputPartition(i) for i in range(self.n)]

    def read(self, partition):
        from pyspark.sql.pandas.types import to_arrow_schema  # noqa: F401  what a source read needs

        from ..planning import source  # the stream reader class a task unpickles
        if self.file_format:
            source.warm_format(self.file_format)
        return iter(())


def register_warm_up(spark) -> str:
    spark.dataSource.register(WarmUpDataSource)
    return NAME


def warm_python_workers(spark, file_format: str | None = None) -> None:
    """Start the executors' Python workers, with the reader's imports, before the query starts: a cold
    worker costs seconds before it reads its first file, and Spark reuses warm ones. Done first, not
    alongside the query's start, whose Python runner must connect back within Spark's fixed 10 s.
    Only a stream without an end warms up (its first files arrive at warm workers); a run that ends when
    drained would pay the workers' start either way, and the warm-up's own Spark job on top."""
    slots = spark.sparkContext.defaultParallelism
    # A read of a Python data source, like the stream's, so it starts the same kind of worker.
    reader = spark.read.format(register_warm_up(spark)).option("partitions", str(slots))
    if file_format:
        reader = reader.option("fileFormat", file_format)
    reader.load().collect()
