import argparse
import os

import pytest
from pyspark.sql import types as T

from s3sqs.sinks import SinkError
from s3sqs.job.flags import OUTPUT
from s3sqs.sinks.kinds import from_flags


SCHEMA = T.StructType([T.StructField("id", T.LongType())])


def parse(*argv, output="/data/out", partition_by=()):
    p = argparse.ArgumentParser()
    for flag in OUTPUT:
        flag.add_to(p)
    args = p.parse_args(list(argv))
    args.output, args.partition_by, args.endpoint_url, args.region = output, list(partition_by), None, "eu-west-1"
    args.transform = getattr(args, "transform", None)
    return from_flags(args)


def test_parquet_is_the_default_and_writes_to_output():
    cfg = parse()
    assert (cfg.kind, cfg.output) == ("parquet", "/data/out")
    with pytest.raises(SinkError, match="--sink parquet needs --output"):
        parse(output=None)
    with pytest.raises(SinkError, match="--table applies to --sink delta or iceberg"):
        parse("--table", "/t")


def test_delta_table_is_a_location_defaulting_to_output():
    assert parse("--sink", "delta").table.uri == "/data/out"
    cfg = parse("--sink", "delta", "--table", "s3://lake/orders/", "--target-file-size", "64m")
    assert (cfg.table.uri, cfg.table.endpoint.region, cfg.target_file_size) == ("s3://lake/orders", "eu-west-1", 64 << 20)
    assert parse("--sink", "delta", "--table", "rel/t").table.uri == os.path.abspath("rel/t")
    with pytest.raises(SinkError, match=r"only local paths and s3:// URIs.*write s3://"):
        parse("--sink", "delta", "--table", "s3a://lake/orders")
    with pytest.raises(SinkError, match="has no bucket"):
        parse("--sink", "delta", "--table", "s3:///orders")
    with pytest.raises(SinkError, match="needs --table \\(or --output\\)"):
        parse("--sink", "delta", output=None)


def test_iceberg_needs_a_catalog_name_and_glue_is_the_default():
    cfg = parse("--sink", "iceberg", "--table", "lake.orders")
    assert (cfg.table_name, cfg.catalog.kind, cfg.catalog.warehouse.uri) == ("lake.orders", "glue", "/data/out")
    assert cfg.describe() == "iceberg table lake.orders (glue catalog)"
    with pytest.raises(SinkError, match="needs --table namespace.table"):
        parse("--sink", "iceberg")
    with pytest.raises(SinkError, match="is not a catalog table name"):
        parse("--sink", "iceberg", "--table", "/data/orders")
    with pytest.raises(SinkError, match="Glue Data Catalog stores names in lower case; write 'lake.orders'"):
        parse("--sink", "iceberg", "--table", "Lake.Orders")


def test_iceberg_sql_catalog_needs_its_url_and_a_warehouse():
    cfg = parse("--sink", "iceberg", "--table", "Lake.Orders", "--catalog", "sql",
                "--catalog-uri", "sqlite:////tmp/c.db", "--warehouse", "/wh", output=None)
    assert (cfg.catalog.kind, cfg.catalog.uri, cfg.catalog.warehouse.uri) == ("sql", "sqlite:////tmp/c.db", "/wh")
    with pytest.raises(SinkError, match="--catalog sql needs --catalog-uri"):
        parse("--sink", "iceberg", "--table", "a.b", "--catalog", "sql")
    with pytest.raises(SinkError, match="--catalog sql needs --warehouse"):
        parse("--sink", "iceberg", "--table", "a.b", "--catalog", "sql", "--catalog-uri", "sqlite://", output=None)
    with pytest.raises(SinkError, match="--catalog-uri applies to --catalog sql"):
        parse("--sink", "iceberg", "--table", "a.b", "--catalog-uri", "sqlite://")


def test_catalog_flags_belong_to_iceberg_and_sizes_are_checked():
    with pytest.raises(SinkError, match="--warehouse applies to --sink iceberg only"):
        parse("--sink", "delta", "--warehouse", "/wh")
    with pytest.raises(SinkError, match="--target-file-size must be a size like 512m.*got '12 parsecs'"):
        parse("--sink", "delta", "--target-file-size", "12 parsecs")
    with pytest.raises(SinkError, match="out of range"):
        parse("--sink", "delta", "--target-file-size", "3g")
    with pytest.raises(SinkError, match="--target-file-size applies to --sink delta or iceberg"):
        parse("--target-file-size", "64m")
    assert parse("--sink", "delta").target_file_size == 128 << 20


def test_the_read_tasks_write_a_sink_s_files_unless_a_transform_or_the_flags_say_otherwise():
    assert parse("--sink", "delta").direct_writes and parse("--sink", "iceberg", "--table", "lake.orders").direct_writes
    assert parse().direct_writes and parse(output="s3://bucket/out").direct_writes  # the parquet sink
    assert not parse("--sink", "delta", "--transform", "m:f").direct_writes  # rows change between read and write
    assert not parse("--transform", "m:f").direct_writes
    assert not parse("--sink", "delta", "--rebalance-writes").direct_writes
    assert not parse("--sink", "delta", "--table-writer", "spark").direct_writes
    assert not parse("--table-writer", "spark").direct_writes  # Spark's file sink
    hadoop = parse(output="s3a://bucket/out")  # a Hadoop scheme: Spark's file sink reaches it, pyarrow does not
    assert hadoop.output == "s3a://bucket/out" and "s3:// URIs only" in hadoop.direct_write_refusal(SCHEMA)
    assert parse().direct_write_refusal(SCHEMA) is None and parse("--sink", "delta").direct_write_refusal(SCHEMA) is None
    for argv in (("--rebalance-writes",), ("--sink", "delta", "--table-writer", "spark", "--rebalance-writes")):
        with pytest.raises(SinkError, match="--rebalance-writes applies to --sink delta or iceberg with the python"):
            parse(*argv)
