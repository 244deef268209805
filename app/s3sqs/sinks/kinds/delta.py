"""The delta sink: a Delta table at --table (or --output), committed by delta-rs (sinks/delta.py) or by
Spark's Delta writer (--table-writer spark), whose streaming sink records (query id, batch id) itself."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.endpoint import Endpoint
from ..location import Location
from ..target import SinkError, TableTarget
from .base import Sink, location

SESSION = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# Where emr-spark-8.0.0 keeps its Delta 4.0.0 writer.
EMR_JARS = ("/usr/share/aws/delta/lib/delta-spark.jar", "/usr/share/aws/delta/lib/delta-storage.jar")
WRITER_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


@dataclass(frozen=True)
class DeltaSink(Sink):
    kind = "delta"
    table: Location | None = None
    table_flag: str = "--table"               # the flag that gave the table's location

    @classmethod
    def own_settings(cls, args: Any, table_writer: str, endpoint: Endpoint) -> dict[str, Any]:
        output = getattr(args, "output", None)
        if not (args.table or output):
            raise SinkError("--sink delta needs --table (or --output): the table's location")
        flag = "--table" if args.table else "--output"
        return {"table": location(args.table or output, flag, endpoint), "table_flag": flag}

    @classmethod
    def refuse_combination(cls, args: Any, table_writer: str) -> None:
        if table_writer == "spark" and args.target_file_size:
            raise SinkError("--target-file-size applies to the python writer and to iceberg; Spark's Delta writer "
                            "writes a file per task and partition (compact the table with OPTIMIZE)")

    def locations(self) -> list[tuple[str, str]]:
        return [(self.table_flag, self.table.uri)]

    def describe(self) -> str:
        return f"delta table {self.table.uri}" + (" (Spark's Delta writer)" if self.uses_spark_writer else "")

    def open_target(self) -> TableTarget:
        from ..delta import DeltaTarget
        return DeltaTarget(self.table, self.partition_by)

    def session_conf(self) -> dict[str, str]:
        return dict(SESSION) if self.uses_spark_writer else {}

    def emr_jars(self) -> tuple[str, ...]:
        return EMR_JARS

    def spark_writer(self, df):
        """Spark's Delta writer into the table's path; new columns merge into the table's schema."""
        from ..spark_tables import check_classpath
        check_classpath(df.sparkSession, self.kind, WRITER_CLASS, EMR_JARS)
        self.check_output_columns(df.columns)
        writer = (df.writeStream.format("delta").outputMode("append").option("mergeSchema", "true")
                  .option("path", self.table.uri))
        return writer.partitionBy(*self.partition_by) if self.partition_by else writer
