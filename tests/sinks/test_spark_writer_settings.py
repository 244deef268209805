"""--table-writer: which writer, catalog and Spark settings the sink flags give (no Spark)."""
import argparse

import pytest

from s3sqs.job.flags import OUTPUT
from s3sqs.sinks import SinkError
from s3sqs.sinks.kinds import from_flags


def parse(*argv, output="/data/out"):
    p = argparse.ArgumentParser()
    for flag in OUTPUT:
        flag.add_to(p)
    args = p.parse_args(list(argv))
    args.output, args.partition_by, args.endpoint_url, args.region = output, [], None, "eu-west-1"
    args.transform = None
    return from_flags(args)


def test_the_python_writer_is_the_jobs_default_and_needs_no_spark_settings():
    for sink in ("delta", "iceberg --table lake.t --catalog sql --catalog-uri sqlite:////tmp/c.db"):
        cfg = parse("--sink", *sink.split())
        assert cfg.table_writer == "python" and cfg.session_conf() == {} and cfg.emr_conf() == {}
    assert parse().session_conf() == {}  # parquet: Spark's file sink


def test_spark_delta_writer_sets_delta_extension_and_catalog():
    cfg = parse("--sink", "delta", "--table-writer", "SPARK")
    assert cfg.table_writer == "spark" and cfg.describe() == "delta table /data/out (Spark's Delta writer)"
    assert cfg.session_conf() == {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                                 "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    assert cfg.emr_conf()["spark.jars"] == ("/usr/share/aws/delta/lib/delta-spark.jar,"
                                           "/usr/share/aws/delta/lib/delta-storage.jar")
    with pytest.raises(SinkError, match="Spark's Delta writer writes a file per task"):
        parse("--sink", "delta", "--table-writer", "spark", "--target-file-size", "64m")


def test_spark_iceberg_writer_uses_glue_on_aws_and_a_hadoop_warehouse_locally():
    glue = parse("--sink", "iceberg", "--table", "raw.orders", "--table-writer", "spark",
                 output="s3://ck/output/ingest")
    conf = glue.emr_conf()
    assert conf == {
        "spark.jars": "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.s3sqs": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.s3sqs.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
        "spark.sql.catalog.s3sqs.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "spark.sql.catalog.s3sqs.client.region": "eu-west-1",
        "spark.sql.catalog.s3sqs.warehouse": "s3://ck/output/ingest"}
    assert glue.spark_table == "s3sqs.raw.orders"
    assert glue.create_properties()["write.spark.accept-any-schema"] == "true"
    local = parse("--sink", "iceberg", "--table", "lake.t", "--table-writer", "spark", "--catalog", "hadoop",
                  "--warehouse", "/w")
    assert {k: v for k, v in local.session_conf().items() if ".type" in k or "warehouse" in k} == {
        "spark.sql.catalog.s3sqs.type": "hadoop", "spark.sql.catalog.s3sqs.warehouse": "/w"}


@pytest.mark.parametrize("argv, message", [
    ("--sink iceberg --table lake.t --catalog hadoop --warehouse /w", "--catalog hadoop needs --table-writer spark"),
    ("--sink iceberg --table lake.t --catalog sql --catalog-uri sqlite:////tmp/c.db --table-writer spark",
     "with --table-writer spark use --catalog hadoop"),
    ("--sink iceberg --table lake.t --catalog hadoop --table-writer spark", "--catalog hadoop needs --warehouse"),
])
def test_writer_and_catalog_mistakes_name_the_flag(argv, message):
    with pytest.raises(SinkError, match=message):
        parse(*argv.split(), output=None)


def test_an_unknown_writer_is_refused_with_a_suggestion():
    with pytest.raises(SystemExit):
        parse("--sink", "delta", "--table-writer", "sparc")
