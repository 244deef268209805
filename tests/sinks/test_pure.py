import datetime as dt
import json

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from s3sqs.core.files import NULL_PARTITION
from s3sqs.sinks.compaction import FileSizes, TableFile, plan_compaction
from s3sqs.sinks.paths import (data_file_name, partition_path, partition_string, spark_escape_path_segment,
                               split_by_keys)
from s3sqs.sinks.stats import FileStats
from s3sqs.sinks.table_schema import (added_fields, check_partitioning, direct_write_refusal, file_schema, fit_to,
                                      table_arrow_schema)
from s3sqs.sinks.target import SinkError

SPARK_SCHEMA = T.StructType([
    T.StructField("id", T.LongType(), False), T.StructField("small", T.ShortType()),
    T.StructField("tiny", T.ByteType()), T.StructField("amount", T.DecimalType(10, 2)),
    T.StructField("at", T.TimestampType()), T.StructField("local", T.TimestampNTZType()),
    T.StructField("day", T.DateType()), T.StructField("tags", T.ArrayType(T.StringType())),
    T.StructField("attrs", T.MapType(T.StringType(), T.IntegerType())),
    T.StructField("point", T.StructType([T.StructField("x", T.DoubleType())])),
])


def test_arrow_schema_follows_spark_types_and_each_formats_limits():
    delta = table_arrow_schema(SPARK_SCHEMA, "delta")
    iceberg = table_arrow_schema(SPARK_SCHEMA, "iceberg")
    assert delta.field("id").type == pa.int64() and not delta.field("id").nullable
    assert (delta.field("small").type, delta.field("tiny").type) == (pa.int16(), pa.int8())
    assert (iceberg.field("small").type, iceberg.field("tiny").type) == (pa.int32(), pa.int32())  # no 8/16-bit
    assert delta.field("amount").type == pa.decimal128(10, 2)
    assert delta.field("at").type == pa.timestamp("us", tz="UTC") and delta.field("local").type == pa.timestamp("us")
    assert delta.field("day").type == pa.date32()
    assert delta.field("tags").type == pa.list_(pa.field("element", pa.string()))
    assert pa.types.is_map(delta.field("attrs").type) and pa.types.is_struct(delta.field("point").type)


def test_unsupported_type_names_the_column_and_the_fix():
    schema = T.StructType([T.StructField("span", T.DayTimeIntervalType())])
    with pytest.raises(SinkError, match=r"column 'span' has type interval.*cast it in --transform"):
        table_arrow_schema(schema, "delta")


def test_delta_and_file_sink_files_leave_out_partition_columns_iceberg_files_keep_them():
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    assert file_schema(schema, ("day",), "delta").names == ["id"] == file_schema(schema, ("day",), "parquet").names
    assert file_schema(schema, ("day",), "iceberg").names == ["id", "day"]


def test_conform_selects_by_name_and_casts_to_the_table_types():
    target = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us", tz="UTC")), ("name", pa.string())])
    batch = pa.RecordBatch.from_pydict({
        "name": pa.array(["a"], pa.large_string()), "extra": [1],
        "at": pa.array([0], pa.timestamp("us", tz="Europe/Berlin")), "id": pa.array([7], pa.int32())})
    out = fit_to(batch, target)
    assert out.schema == target and out.to_pylist() == [
        {"id": 7, "at": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "name": "a"}]


def test_partition_values_and_folders():
    assert partition_string(None) is None and partition_string("") is None  # as Spark writes them
    assert partition_string(True) == "true" and partition_string(3) == "3"
    assert partition_string(dt.date(2026, 11, 1)) == "2026-11-01"
    assert partition_path(("day", "k"), ("2026-11-01", None)) == f"day=2026-11-01/k={NULL_PARTITION}"
    # Percent-encoded like delta-rs: no '/', '=', '%' or space can change the folder structure.
    assert partition_path(("k",), ("a b/c=d%e ü",)) == "k=a%20b%2Fc%3Dd%25e%20%C3%BC"
    # Spark's file sink's folders: its readers decode each %XX as one character, so UTF-8 stays as it is.
    assert partition_path(("k",), ("a b/c=d%e ü:\x01",), spark_escape_path_segment) == "k=a b%2Fc%3Dd%25e ü%3A%01"


def test_a_parquet_sink_output_the_read_tasks_cannot_write_is_left_to_spark_s_file_sink():
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("at", T.TimestampType()),
                           T.StructField("span", T.DayTimeIntervalType())])
    assert "column 'span' has type interval" in direct_write_refusal(schema, ())
    plain = T.StructType(schema.fields[:2])
    assert direct_write_refusal(plain, ()) is None and direct_write_refusal(plain, ("id",)) is None
    assert "partition by a string, integer, date or boolean" in direct_write_refusal(plain, ("at",))


def test_file_names_are_unique_per_batch_write_task_attempt_and_sequence():
    names = {data_file_name(b, w, t, a, s) for b in (1, 2) for w in ("x", "y") for t in (0, 1) for a in (0, 1)
             for s in (0, 1)}
    assert len(names) == 32
    assert data_file_name(12, "abc", 3, 1, 4) == "part-000012-abc-00003-1-004.zstd.parquet"


def test_split_by_keys_groups_rows_by_partition_value_with_nulls():
    table = pa.table({"id": [1, 2, 3, 4, 5], "day": ["a", None, "a", "b", None], "k": [1, 1, 1, 1, 2]})
    groups = {key: t.column("id").to_pylist() for key, t in split_by_keys(table, ("day", "k"))}
    assert groups == {("a", 1): [1, 3], (None, 1): [2], ("b", 1): [4], (None, 2): [5]}
    assert split_by_keys(table, ()) == [((), table)]
    assert split_by_keys(table.slice(0, 0), ("day",)) == []


def test_check_partition_columns_names_the_flag():
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("amount", T.DoubleType())])
    with pytest.raises(SinkError, match=r"--partition-by columns \['day'\] are not in the output"):
        check_partitioning(schema, ("day",))
    with pytest.raises(SinkError, match=r"--partition-by column 'amount' has type double"):
        check_partitioning(schema, ("amount",))
    with pytest.raises(SinkError, match="at least one data column"):
        check_partitioning(T.StructType([T.StructField("id", T.LongType())]), ("id",))
    check_partitioning(schema, ("id",))


def test_delta_stats_are_exact_where_readers_trust_them():
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("x", pa.float64()),
                        ("at", pa.timestamp("us", tz="UTC")), ("d", pa.date32()), ("long", pa.string())])
    stats = FileStats(schema)
    stats.update(pa.table({"id": [5, None], "name": ["b", "a"], "x": [1.0, float("nan")],
                           "at": pa.array([0, 1], pa.timestamp("us", tz="UTC")),
                           "d": [dt.date(2026, 1, 2), None], "long": ["y" * 100, "z"]}, schema=schema))
    stats.update(pa.table({"id": [1], "name": ["c"], "x": [2.0], "at": pa.array([2], pa.timestamp("us", tz="UTC")),
                           "d": [dt.date(2025, 1, 1)], "long": ["a"]}, schema=schema))
    s = json.loads(stats.to_json())
    assert s["numRecords"] == 3
    assert s["minValues"] == {"id": 1, "name": "a", "d": "2025-01-01"}
    assert s["maxValues"] == {"id": 5, "name": "c", "d": "2026-01-02"}
    assert s["nullCount"] == {"id": 1, "name": 0, "x": 0, "at": 0, "d": 1, "long": 0}


def test_compaction_plan_combines_small_files_within_a_partition_up_to_the_target():
    files = [TableFile(f"a{i}", 10, ("a",)) for i in range(5)] + [
        TableFile("big", 80, ("a",)), TableFile("lonely", 5, ("b",)), TableFile("c1", 30, ("c",)),
        TableFile("c2", 30, ("c",)), TableFile("c3", 50, ("c",))]
    groups = plan_compaction(files, target_size=100)
    as_paths = sorted(sorted(f.path for f in g) for g in groups)
    # "big" is at least 3/4 of the target; "lonely" has nothing to combine with; c1+c2 fit, c3 would overflow.
    assert as_paths == [["a0", "a1", "a2", "a3", "a4"], ["c1", "c2"]]
    with pytest.raises(SinkError):
        plan_compaction(files, 0)


def test_file_sizes_summary():
    s = FileSizes.of([1024, 3072, 2048])
    assert (s.count, s.median_bytes, s.total_bytes) == (3, 2048.0, 6144)
    assert s.describe() == "3 files, median 2.0 KiB, total 6.0 KiB"
    assert FileSizes.of([]).count == 0


def test_added_fields_are_the_fields_a_schema_adds_by_name_at_any_level():
    base = pa.schema([("id", pa.int64()), ("addr", pa.struct([("city", pa.string())])),
                      ("tags", pa.list_(pa.struct([("k", pa.string())])))])
    grown = pa.schema([("id", pa.int64()), ("addr", pa.struct([("city", pa.large_string()), ("zip", pa.string())])),
                       ("tags", pa.large_list(pa.struct([("k", pa.string()), ("v", pa.int32())]))),
                       ("score", pa.float64())])
    assert added_fields(base, base) == []
    assert added_fields(base, grown) == ["score", "addr.zip", "tags.v"]
    assert added_fields(grown, base) is None  # dropped fields
    assert added_fields(base, pa.schema([("addr", base.field("addr").type), ("id", pa.int64()),
                                         ("tags", base.field("tags").type)])) == []  # by name, not order
    assert added_fields(base, pa.schema([("id", pa.string()), *list(base)[1:]])) is None  # a type change
    m = pa.schema([("m", pa.map_(pa.string(), pa.struct([("a", pa.int64())])))])
    assert added_fields(m, pa.schema([("m", pa.map_(pa.string(), pa.struct([("a", pa.int64()), ("b", pa.bool_())])))])) == ["m.b"]
