"""The iceberg sink: a table `namespace.table` in a catalog (Glue on AWS, pyiceberg's SQL catalog or, for
Spark's writer run locally, Spark's Hadoop catalog), committed by pyiceberg (sinks/iceberg.py) or by Spark's
Iceberg writer (--table-writer spark), whose snapshot summaries record (query id, batch id) themselves."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...core.endpoint import Endpoint
from ..location import Location
from ..target import SinkError, TableTarget
from .base import Sink, location

CATALOGS = ("glue", "sql")           # pyiceberg's (the python writer, compact-table)
JOB_CATALOGS = CATALOGS + ("hadoop",)  # and Spark's Hadoop catalog, for Spark's Iceberg writer run locally
SPARK_CATALOG = "s3sqs"  # the Spark catalog an Iceberg --table (namespace.table) is looked up in
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
WRITER_CLASS = "org.apache.iceberg.spark.SparkCatalog"
# Where emr-spark-8.0.0 keeps its Iceberg 1.10.1 writer.
EMR_JARS = ("/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar",)
ACCEPT_ANY_SCHEMA = "write.spark.accept-any-schema"
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True)
class CatalogConfig:
    kind: str
    uri: str | None = None
    warehouse: Location | None = None
    warehouse_flag: str = "--warehouse"  # or "--output", when the warehouse defaulted to it


@dataclass(frozen=True)
class IcebergSink(Sink):
    kind = "iceberg"
    takes_catalog = True
    table_name: str = ""                      # "namespace.table"
    catalog: CatalogConfig | None = None

    @classmethod
    def own_settings(cls, args: Any, table_writer: str, endpoint: Endpoint) -> dict[str, Any]:
        check_catalog_writer(args.catalog or "glue", table_writer)
        return {"table_name": iceberg_table_name(args.table, args.catalog),
                "catalog": catalog_config(args.catalog, args.catalog_uri, args.warehouse,
                                          getattr(args, "output", None), endpoint)}

    def locations(self) -> list[tuple[str, str]]:
        if self.catalog.warehouse is None:
            return []
        return [(self.catalog.warehouse_flag, self.catalog.warehouse.uri)]

    def describe(self) -> str:
        return f"iceberg table {self.table_name} ({self.catalog.kind} catalog" + \
            (", Spark's Iceberg writer)" if self.uses_spark_writer else ")")

    def open_target(self) -> TableTarget:
        from ..iceberg import IcebergTarget, open_catalog
        return IcebergTarget(open_catalog(self.catalog, self.endpoint), self.table_name, self.partition_by,
                             self.catalog.warehouse, self.endpoint)

    # --- Spark's Iceberg writer ---
    @property
    def spark_table(self) -> str:
        return f"{SPARK_CATALOG}.{self.table_name}"

    def session_conf(self) -> dict[str, str]:
        """The session's extensions and the Iceberg catalog the table is looked up in."""
        if not self.uses_spark_writer:
            return {}
        prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
        conf = {"spark.sql.extensions": EXTENSIONS, prefix: "org.apache.iceberg.spark.SparkCatalog"}
        if self.catalog.kind == "glue":
            conf[f"{prefix}.catalog-impl"] = "org.apache.iceberg.aws.glue.GlueCatalog"
            conf[f"{prefix}.io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
            if self.endpoint.region:
                conf[f"{prefix}.client.region"] = self.endpoint.region
        else:
            conf[f"{prefix}.type"] = "hadoop"
        if self.catalog.warehouse is not None:
            conf[f"{prefix}.warehouse"] = self.catalog.warehouse.uri
        return conf

    def emr_jars(self) -> tuple[str, ...]:
        return EMR_JARS

    def create_properties(self) -> dict[str, str]:
        """A table the job creates accepts any schema, so the writer can add new columns."""
        return {ACCEPT_ANY_SCHEMA: "true", "write.target-file-size-bytes": str(self.target_file_size)}

    def spark_writer(self, df):
        """Spark's Iceberg writer; creates the table (and its namespace) when it does not exist, with the
        stream's schema and --partition-by."""
        from ..spark_tables import check_classpath
        check_classpath(df.sparkSession, self.kind, WRITER_CLASS, EMR_JARS)
        self.check_output_columns(df.columns)
        self._ensure_table(df)
        # fanout: a task may hold rows of several partitions in any order, as a micro-batch's files do
        return (df.writeStream.format("iceberg").outputMode("append").option("fanout-enabled", "true")
                .option("merge-schema", "true"))

    def start(self, writer):
        """Spark's Iceberg writer goes to the catalog's table; the python writer's foreachBatch starts."""
        return writer.toTable(self.spark_table) if self.uses_spark_writer else writer.start()

    def _ensure_table(self, df) -> None:
        spark = df.sparkSession
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {SPARK_CATALOG}.{self.table_name.rsplit('.', 1)[0]}")
        if spark.catalog.tableExists(self.spark_table):
            return
        create = spark.createDataFrame([], df.schema).writeTo(self.spark_table).using("iceberg")
        for key, value in self.create_properties().items():
            create = create.tableProperty(key, value)
        if self.partition_by:
            from pyspark.sql.functions import col
            create = create.partitionedBy(*(col(c) for c in self.partition_by))
        create.create()


def iceberg_table_name(text: str | None, catalog: str | None) -> str:
    name = (text or "").strip()
    if not name:
        raise SinkError("--sink iceberg needs --table namespace.table, the table's name in the catalog")
    if not _IDENTIFIER_RE.match(name):
        raise SinkError(f"--table {name!r} is not a catalog table name; write namespace.table "
                        "(letters, digits and _)")
    if (catalog or "glue") == "glue" and name != name.lower():
        raise SinkError(f"--table {name!r}: the Glue Data Catalog stores names in lower case; "
                        f"write {name.lower()!r}")
    return name


def check_catalog_writer(catalog: str, table_writer: str) -> None:
    """Which catalogs each Iceberg writer reaches: pyiceberg has no Hadoop catalog, and Spark's JDBC catalog
    would need a JDBC driver that Spark does not bundle."""
    if catalog == "hadoop" and table_writer != "spark":
        raise SinkError("--catalog hadoop needs --table-writer spark (pyiceberg has no Hadoop catalog); "
                        "for the python writer use --catalog sql")
    if catalog == "sql" and table_writer == "spark":
        raise SinkError("--catalog sql is pyiceberg's SQL catalog; with --table-writer spark use --catalog hadoop "
                        "locally (a warehouse folder) or glue on AWS")


def catalog_config(kind: str | None, uri: str | None, warehouse: str | None, output: str | None,
                   endpoint: Endpoint = Endpoint(), creates_tables: bool = True) -> CatalogConfig:
    """The Iceberg catalog. A job may create its table, so it needs a warehouse for the sql catalog;
    compact-table only opens existing tables."""
    kind = kind or "glue"
    if kind == "sql" and not uri:
        raise SinkError("--catalog sql needs --catalog-uri, a SQLAlchemy URL such as sqlite:////tmp/catalog.db")
    if kind == "glue" and uri:
        raise SinkError("--catalog-uri applies to --catalog sql; the Glue catalog is found through the region")
    text = warehouse or output
    if kind in ("sql", "hadoop") and creates_tables and not text:
        raise SinkError(f"--catalog {kind} needs --warehouse (or --output): where new tables are created")
    flag = "--warehouse" if warehouse else "--output"
    return CatalogConfig(kind=kind, uri=uri, warehouse=location(text, flag, endpoint) if text else None,
                         warehouse_flag=flag)
