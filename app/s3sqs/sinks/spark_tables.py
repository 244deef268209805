"""Spark's own Delta and Iceberg writers (`--table-writer spark`), as an EMR user writes a stream:
`writeStream.format("delta")` into the table's location, or `writeStream.format("iceberg").toTable(...)`
into a table of the job's Spark catalog.

Exactly once comes from the writers themselves: Delta's streaming sink records (query id, batch id) as a
transaction in the same log commit as the batch's files, and Iceberg's streaming append stores them in the
snapshot summary (`spark.sql.streaming.queryId`, `spark.sql.streaming.epochId`); both skip a batch Spark
replays after a crash. This source replays a batch with the same files, so the rows are the same too.

New columns (the job restarts its query with the evolved schema) are added by the writers: Delta with
`mergeSchema`, Iceberg with `merge-schema` on a table that accepts any schema (a table the job creates
does; an existing one needs the property `write.spark.accept-any-schema=true`).

The Spark configuration is defined here once: the job sets the session settings when it starts Spark, and
submit-job sends the same settings, plus the jars EMR bundles, to EMR Serverless.
"""
from __future__ import annotations

from ..core.endpoint import Endpoint
from .config import SinkConfig
from .target import SinkError

CATALOG = "s3sqs"  # the Spark catalog an Iceberg --table (namespace.table) is looked up in
DELTA_SESSION = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
# Where emr-spark-8.0.0 keeps the bundled writers (Delta 4.0.0, Iceberg 1.10.1); not on the classpath unless
# spark.jars names them.
EMR_JARS = {
    "delta": ("/usr/share/aws/delta/lib/delta-spark.jar", "/usr/share/aws/delta/lib/delta-storage.jar"),
    "iceberg": ("/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar",),
}
ACCEPT_ANY_SCHEMA = "write.spark.accept-any-schema"
WRITER_CLASS = {"delta": "io.delta.sql.DeltaSparkSessionExtension",
                "iceberg": "org.apache.iceberg.spark.SparkCatalog"}


def uses_spark_writer(cfg: SinkConfig) -> bool:
    return cfg.kind in ("delta", "iceberg") and cfg.table_writer == "spark"


def session_conf(cfg: SinkConfig, endpoint: Endpoint = Endpoint()) -> dict[str, str]:
    """The settings Spark needs before the session starts (extensions) and the Iceberg catalog; empty for
    the Python writers and the Parquet sink."""
    if not uses_spark_writer(cfg):
        return {}
    if cfg.kind == "delta":
        return dict(DELTA_SESSION)
    prefix = f"spark.sql.catalog.{CATALOG}"
    conf = {"spark.sql.extensions": ICEBERG_EXTENSIONS, prefix: "org.apache.iceberg.spark.SparkCatalog"}
    if cfg.catalog.kind == "glue":
        conf[f"{prefix}.catalog-impl"] = "org.apache.iceberg.aws.glue.GlueCatalog"
        conf[f"{prefix}.io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
        if endpoint.region:
            conf[f"{prefix}.client.region"] = endpoint.region
    else:
        conf[f"{prefix}.type"] = "hadoop"
    if cfg.catalog.warehouse is not None:
        conf[f"{prefix}.warehouse"] = cfg.catalog.warehouse.uri
    return conf


def emr_conf(cfg: SinkConfig, endpoint: Endpoint = Endpoint()) -> dict[str, str]:
    """What submit-job sends to EMR Serverless: the bundled jars, and the session settings."""
    if not uses_spark_writer(cfg):
        return {}
    return {"spark.jars": ",".join(EMR_JARS[cfg.kind]), **session_conf(cfg, endpoint)}


def table_name(cfg: SinkConfig) -> str:
    return f"{CATALOG}.{cfg.table_name}"


def iceberg_create_properties(cfg: SinkConfig) -> dict[str, str]:
    return {ACCEPT_ANY_SCHEMA: "true", "write.target-file-size-bytes": str(cfg.target_file_size)}


def spark_table_writer(df, cfg: SinkConfig):
    """The DataStreamWriter into the table, not yet started (`start` starts it). Creates the Iceberg table
    (and its namespace) when it does not exist, with the stream's schema and --partition-by."""
    check_classpath(df.sparkSession, cfg)
    missing = [c for c in cfg.partition_by if c not in df.columns]
    if missing:
        raise SinkError(f"--partition-by {','.join(missing)}: not in the output (its columns: "
                        f"{', '.join(df.columns)})")
    if cfg.kind == "delta":
        writer = (df.writeStream.format("delta").outputMode("append").option("mergeSchema", "true")
                  .option("path", cfg.table.uri))
        return writer.partitionBy(*cfg.partition_by) if cfg.partition_by else writer
    _ensure_iceberg_table(df, cfg)
    # fanout: a task may hold rows of several partitions in any order, as a micro-batch's files do
    return (df.writeStream.format("iceberg").outputMode("append").option("fanout-enabled", "true")
            .option("merge-schema", "true"))


def check_classpath(spark, cfg: SinkConfig) -> None:
    """Spark only warns when a session extension is missing; say plainly that the writer's jars are not there."""
    from py4j.protocol import Py4JJavaError

    name = WRITER_CLASS[cfg.kind]
    try:
        spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(name)
    except Py4JJavaError:
        raise SinkError(f"--table-writer spark: Spark's {cfg.kind} writer ({name}) is not on Spark's classpath; "
                        f"give spark-submit its jars (on EMR: --conf spark.jars={','.join(EMR_JARS[cfg.kind])}; "
                        f"locally, after make setup: --jars $(python -m devtools.jars path {cfg.kind})), or use "
                        "--table-writer python") from None


def start(writer, cfg: SinkConfig):
    """Start the query: Iceberg's streaming write goes to the catalog table, Delta's to its path."""
    if cfg.kind == "iceberg":
        return writer.toTable(table_name(cfg))
    return writer.start()


def _ensure_iceberg_table(df, cfg: SinkConfig) -> None:
    spark = df.sparkSession
    namespace = cfg.table_name.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{namespace}")
    if spark.catalog.tableExists(table_name(cfg)):
        return
    create = spark.createDataFrame([], df.schema).writeTo(table_name(cfg)).using("iceberg")
    for key, value in iceberg_create_properties(cfg).items():
        create = create.tableProperty(key, value)
    if cfg.partition_by:
        from pyspark.sql.functions import col
        create = create.partitionedBy(*(col(c) for c in cfg.partition_by))
    create.create()
