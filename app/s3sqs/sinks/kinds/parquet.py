"""The parquet sink: Parquet files under --output, committed in Spark's file sink log (`_spark_metadata`),
written by Spark's file sink or, in a direct write, by the read tasks (sinks/file_sink_log.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.endpoint import Endpoint
from ...core.errors import UsageError
from ..location import Location
from ..target import SinkError, TableTarget
from .base import Sink


@dataclass(frozen=True)
class ParquetSink(Sink):
    kind = "parquet"
    writes_table_files = False  # Spark's file sink writes a file per task and partition
    output: str = ""
    output_location: Location | None = None   # None: a Hadoop scheme (s3a://) only Spark's file sink reaches

    @classmethod
    def refuse_flags(cls, args: Any) -> None:
        if args.target_file_size:
            raise SinkError("--target-file-size applies to --sink delta or iceberg; Spark's file sink writes a "
                            "file per task and partition")

    @classmethod
    def own_settings(cls, args: Any, table_writer: str, endpoint: Endpoint) -> dict[str, Any]:
        if args.table:
            raise SinkError("--table applies to --sink delta or iceberg; the parquet sink writes to --output")
        output = getattr(args, "output", None)
        if not output:
            raise SinkError("--sink parquet needs --output, the folder the Parquet files go to")
        try:
            where = Location.parse(output, "--output", endpoint)
        except UsageError:
            where = None
        return {"output": output, "output_location": where}

    def direct_write_refusal(self, schema) -> str | None:
        """An --output in a Hadoop scheme pyarrow does not reach, or a column type the read tasks' Parquet
        writer cannot hold."""
        from ..table_schema import direct_write_refusal as refusal

        if self.output_location is None:
            return self._unreachable()
        return refusal(schema, self.partition_by)

    def describe(self) -> str:
        return self.output

    def open_target(self) -> TableTarget:
        if self.output_location is None:
            raise SinkError(self._unreachable())
        from ..file_sink_log import FileSinkLogTarget
        return FileSinkLogTarget(self.output_location)

    def spark_writer(self, df):
        self.check_output_columns(df.columns)
        writer = df.writeStream.format("parquet").option("path", self.output)
        return writer.partitionBy(*self.partition_by) if self.partition_by else writer

    def _unreachable(self) -> str:
        return f"--output {self.output}: the read tasks write local folders and s3:// URIs only"
