"""The table side of the sinks without Spark: files written as the executors write them, committed as
the driver commits them, with real delta-rs and pyiceberg, on local disk and on S3 (moto) with the Glue
catalog (moto) as on EMR."""
import json
import threading
import uuid

import boto3
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from s3sqs.core.endpoint import Endpoint
from s3sqs.sinks import SinkError
from s3sqs.sinks import iceberg as iceberg_module
from s3sqs.sinks.kinds.iceberg import CatalogConfig
from s3sqs.sinks import file_sink_log
from s3sqs.sinks.delta import DeltaTarget
from s3sqs.sinks.file_sink_log import FileSinkLogTarget
from s3sqs.sinks.table_files import WriteSpec, write_partition
from s3sqs.sinks.iceberg import MARKER_PREFIX, IcebergTarget, open_catalog
from s3sqs.sinks.table_schema import table_arrow_schema
from s3sqs.sinks.location import Location

SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType()),
                       T.StructField("day", T.StringType())])
DAYS = ["2026-11-01", "a b/c%", None]


def make_target(fmt, tmp_path, partition_by=("day",)):
    if fmt == "delta":
        return DeltaTarget(Location.parse(str(tmp_path / "delta"), "--table"), partition_by)
    warehouse = Location.parse(str(tmp_path / "wh"), "--warehouse")
    catalog = open_catalog(CatalogConfig("sql", f"sqlite:///{tmp_path}/catalog.db", warehouse))
    return IcebergTarget(catalog, "lake.orders", partition_by, warehouse)


def batch_rows(start, n):
    return [{"id": i, "name": f"n{i}", "day": DAYS[i % len(DAYS)]} for i in range(start, start + n)]


def write(target, fmt, batch_id, rows, target_size=1 << 20, partition_by=None):
    schema = table_arrow_schema(SCHEMA, fmt)
    spec = WriteSpec(fmt, target.write_location.uri, partition_by or target.partition_by, target_size, batch_id,
                     uuid.uuid4().hex[:12], "/unused", target.write_location.endpoint)
    return write_partition([pa.RecordBatch.from_pylist(rows, schema=schema)], spec, schema, 0, 0)


def ids(target):
    table = target.table()
    data = table.to_pyarrow_table() if isinstance(target, DeltaTarget) else table.scan().to_arrow()
    return sorted(data.column("id").to_pylist())


@pytest.fixture(params=["delta", "iceberg"])
def fmt(request):
    return request.param


def test_a_batch_is_committed_once_per_query(fmt, tmp_path):
    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(SCHEMA, fmt))
    first = write(target, fmt, 0, batch_rows(0, 30))
    assert target.committed_batch("q1") == -1
    assert target.commit(first, "q1", 0) is True
    # Spark replays batch 0 after a crash that followed the table commit: new files, same batch id.
    assert target.commit(write(target, fmt, 0, batch_rows(0, 30)), "q1", 0) is False
    assert target.commit(write(target, fmt, 1, batch_rows(30, 30)), "q1", 1) is True
    assert target.committed_batch("q1") == 1 and ids(target) == list(range(60))
    # Another query (a new checkpoint) counts its batches from 0 again, independently.
    assert target.commit(write(target, fmt, 0, batch_rows(60, 5)), "q2", 0) is True
    assert (target.committed_batch("q1"), target.committed_batch("q2")) == (1, 0)
    assert ids(target) == list(range(65))


def test_partition_values_survive_encoding_and_nulls(fmt, tmp_path):
    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(SCHEMA, fmt))
    target.commit(write(target, fmt, 0, batch_rows(0, 9)), "q", 0)
    table = target.table()
    data = table.to_pyarrow_table() if fmt == "delta" else table.scan().to_arrow()
    assert sorted(data.to_pylist(), key=lambda r: r["id"]) == batch_rows(0, 9)


def test_an_existing_table_must_have_the_outputs_columns_and_partitioning(fmt, tmp_path):
    make_target(fmt, tmp_path).ensure(table_arrow_schema(SCHEMA, fmt))
    make_target(fmt, tmp_path).ensure(table_arrow_schema(SCHEMA, fmt))  # same again: fine
    with pytest.raises(SinkError, match=r"partitioned by .*day.* but --partition-by is \['name'\]"):
        make_target(fmt, tmp_path, ("name",)).ensure(table_arrow_schema(SCHEMA, fmt))
    other = T.StructType([T.StructField("id", T.StringType()), *SCHEMA.fields[1:]])
    with pytest.raises(SinkError, match=r"(other column types|has columns).*--transform"):
        make_target(fmt, tmp_path).ensure(table_arrow_schema(other, fmt))


def test_files_roll_over_at_the_target_size(tmp_path):
    target = make_target("delta", tmp_path, ())
    target.ensure(table_arrow_schema(SCHEMA, "delta"))
    rows = [{"id": i, "name": uuid.uuid4().hex * 4, "day": "d"} for i in range(20000)]
    schema = table_arrow_schema(SCHEMA, "delta")
    spec = WriteSpec("delta", target.write_location.uri, (), 64 << 10, 0, "w", "/unused")
    batches = pa.Table.from_pylist(rows, schema=schema).to_batches(max_chunksize=1000)
    files = write_partition(batches, spec, schema, 3, 1)
    assert len(files) >= 4 and sum(f.rows for f in files) == 20000
    assert all(f.size >= 64 << 10 for f in files[:-1])  # every file but the last reached the target
    assert all("-00003-1-" in f.relative_path for f in files) and len({f.uri for f in files}) == len(files)
    target.commit(files, "q", 0)
    assert ids(target) == list(range(20000))


def test_compaction_runs_while_the_stream_commits(fmt, tmp_path, monkeypatch):
    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(SCHEMA, fmt))
    for b in range(8):
        target.commit(write(target, fmt, b, batch_rows(b * 30, 30)), "q", b)
    before = len(target.files())
    stream = make_target(fmt, tmp_path)  # the job's own handle on the table

    def more_batches():
        for b in range(9, 14):
            stream.commit(write(stream, fmt, b, batch_rows(b * 30, 30)), "q", b)
    appender = threading.Thread(target=more_batches)
    if fmt == "iceberg":
        # The stream commits exactly between the compaction's read of the table and its swap, then
        # goes on committing while the compaction continues.
        real, calls = iceberg_module.parquet_file_to_data_file, []

        def racing(*args):
            calls.append(1)
            if len(calls) == 1:
                stream.commit(write(stream, fmt, 8, batch_rows(240, 30)), "q", 8)
                appender.start()
            return real(*args)
        monkeypatch.setattr(iceberg_module, "parquet_file_to_data_file", racing)
    else:
        stream.commit(write(stream, fmt, 8, batch_rows(240, 30)), "q", 8)
        appender.start()
    lines = []
    compacted_before, after = make_target(fmt, tmp_path).compact(1 << 20, progress=lines.append)
    appender.join()
    assert compacted_before.count >= before and after.count < compacted_before.count
    assert ids(target) == list(range(14 * 30)) and target.committed_batch("q") == 13
    if fmt == "iceberg":
        assert len(calls) >= 2  # the first swap conflicted and was retried on the new table state
    assert any("[1/" in line for line in lines)


def test_dry_run_changes_nothing(fmt, tmp_path):
    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(SCHEMA, fmt))
    for b in range(3):
        target.commit(write(target, fmt, b, batch_rows(b * 10, 10)), "q", b)
    files = sorted(f.path for f in target.files())
    before, after = target.compact(1 << 20, dry_run=True, progress=lambda _: None)
    assert before == after and sorted(f.path for f in target.files()) == files


# --- the same code on S3, as on EMR (moto stands in for S3 and Glue) ---

@pytest.fixture
def bucket(moto_endpoint):
    name = f"lake-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def test_delta_on_s3_commits_once_and_compacts(moto_endpoint, bucket):
    endpoint = Endpoint(moto_endpoint, "us-east-1")
    target = DeltaTarget(Location.parse(f"s3://{bucket}/tables/orders", "--table", endpoint),
                         ("day",))
    target.ensure(table_arrow_schema(SCHEMA, "delta"))
    for b in range(3):
        target.commit(write(target, "delta", b, batch_rows(b * 20, 20)), "q", b)
    assert target.commit(write(target, "delta", 2, batch_rows(40, 20)), "q", 2) is False
    assert ids(target) == list(range(60))
    before, after = target.compact(1 << 20, progress=lambda _: None)
    assert (before.count, after.count) == (9, 3) and ids(target) == list(range(60))
    keys = [o["Key"] for o in boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
            .list_objects_v2(Bucket=bucket)["Contents"]]
    assert any(k.startswith("tables/orders/_delta_log/") for k in keys)
    assert any(k.startswith("tables/orders/day=a%20b%2Fc%25/") for k in keys)


def test_a_file_sink_log_on_s3_commits_once_compacts_and_lists_the_files_written(moto_endpoint, bucket):
    endpoint = Endpoint(moto_endpoint, "us-east-1")
    target = FileSinkLogTarget(Location.parse(f"s3://{bucket}/out", "--output", endpoint))
    target.ensure(table_arrow_schema(SCHEMA, "parquet"))
    written = {}
    for b in range(21):
        written[b] = write(target, "parquet", b, batch_rows(b * 3, 3), partition_by=("day",))
        assert target.commit(written[b], "q", b)
    assert target.commit(written[20], "q", 20) is False and target.committed_batch("q") == 20
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    log = {o["Key"].rsplit("/", 1)[1] for o in s3.list_objects_v2(Bucket=bucket, Prefix="out/_spark_metadata/")["Contents"]}
    log.discard("")  # pyarrow keeps a folder marker after a delete; Spark's readers skip it
    # 9.compact lists 0-9 again, 19.compact all: the entries before 9 are dropped, as Spark drops them.
    assert log == {"9.compact", *map(str, range(10, 19)), "19.compact", "20"}
    listed = [json.loads(line)["path"] for name in ("19.compact", "20") for line in
              s3.get_object(Bucket=bucket, Key=f"out/_spark_metadata/{name}")["Body"].read().decode().splitlines()[1:]]
    assert sorted(listed) == sorted(file_sink_log.hadoop_uri(f.uri) for fs in written.values() for f in fs)
    assert any("/day=a%20b%252Fc%2525/" in p for p in listed)  # Spark's folder escaping, then quoted in the URI
    rows = sum(f.rows for fs in written.values() for f in fs)
    assert rows == 63 and all(s3.head_object(Bucket=bucket, Key=f.uri.split("/", 3)[3])["ContentLength"] == f.size
                              for fs in written.values() for f in fs)


def test_iceberg_in_glue_on_s3_commits_once_and_compacts(moto_endpoint, bucket):
    endpoint = Endpoint(moto_endpoint, "us-east-1")
    warehouse = Location.parse(f"s3://{bucket}/warehouse", "--warehouse", endpoint)
    catalog = open_catalog(CatalogConfig("glue", None, warehouse), endpoint)
    name = f"lake_{uuid.uuid4().hex[:6]}.orders"
    target = IcebergTarget(catalog, name, ("day",), warehouse, endpoint)
    target.ensure(table_arrow_schema(SCHEMA, "iceberg"))
    assert target.table().location() == f"s3://{bucket}/warehouse/{name.replace('.', '/')}"
    for b in range(3):
        target.commit(write(target, "iceberg", b, batch_rows(b * 20, 20)), "q", b)
    assert target.commit(write(target, "iceberg", 2, batch_rows(40, 20)), "q", 2) is False
    assert target.table().properties[MARKER_PREFIX + "q"] == "2" and ids(target) == list(range(60))
    # Without the property (removed by hand), the snapshot summaries still say batch 2 is in.
    with target.table().transaction() as tx:
        tx.remove_properties(MARKER_PREFIX + "q")
    assert target.commit(write(target, "iceberg", 2, batch_rows(40, 20)), "q", 2) is False
    glue = boto3.client("glue", endpoint_url=moto_endpoint, region_name="us-east-1")
    table = glue.get_table(DatabaseName=name.split(".")[0], Name="orders")["Table"]
    assert table["Parameters"]["table_type"].upper() == "ICEBERG"
    before, after = target.compact(1 << 20, progress=lambda _: None)
    assert (before.count, after.count) == (9, 3) and ids(target) == list(range(60))


def test_compact_table_command_previews_compacts_and_names_a_missing_table(fmt, tmp_path, capsys):
    from ops.compaction.cli import main

    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(SCHEMA, fmt))
    for b in range(4):
        target.commit(write(target, fmt, b, batch_rows(b * 10, 10)), "q", b)
    table = str(tmp_path / "delta") if fmt == "delta" else "lake.orders"
    catalog = [] if fmt == "delta" else ["--catalog", "sql", "--catalog-uri", f"sqlite:///{tmp_path}/catalog.db"]
    files = sorted(f.path for f in target.files())

    assert main(["--format", fmt, "--table", table, *catalog, "--dry-run"]) == 0
    assert "(dry run: nothing changed)" in capsys.readouterr().out
    assert sorted(f.path for f in target.files()) == files
    assert main(["--format", fmt, "--table", table, *catalog, "--apply"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("before: ") and "after: " in out
    assert len(make_target(fmt, tmp_path).files()) < len(files) and ids(make_target(fmt, tmp_path)) == list(range(40))

    missing = str(tmp_path / "nowhere") if fmt == "delta" else "lake.nowhere"
    assert main(["--format", fmt, "--table", missing, *catalog, "--apply"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("compact-table: error: ") and "--table" in err[0], err


def test_a_stream_whose_schema_gained_fields_adds_them_to_the_table(fmt, tmp_path):
    addr = lambda *names: T.StructField("addr", T.StructType([T.StructField(n, T.StringType()) for n in names]))
    base = T.StructType(SCHEMA.fields + [addr("city")])
    wider = T.StructType(SCHEMA.fields + [addr("city", "zip"), T.StructField("score", T.DoubleType())])

    def commit(target, schema, batch_id, rows):
        arrow = table_arrow_schema(schema, fmt)
        spec = WriteSpec(fmt, target.write_location.uri, target.partition_by, 1 << 20, batch_id,
                         uuid.uuid4().hex[:12], "/unused", target.write_location.endpoint)
        return target.commit(write_partition([pa.RecordBatch.from_pylist(rows, schema=arrow)], spec, arrow, 0, 0),
                             "q", batch_id)

    target = make_target(fmt, tmp_path)
    target.ensure(table_arrow_schema(base, fmt))
    assert commit(target, base, 0, [{**r, "addr": {"city": "c"}} for r in batch_rows(0, 3)])
    again = make_target(fmt, tmp_path)  # the restarted query, with the evolved schema
    again.ensure(table_arrow_schema(wider, fmt))
    again.ensure(table_arrow_schema(wider, fmt))  # a second start (a kill in between) is fine too
    if fmt == "iceberg":  # the new fields come with the batch that holds them, in its commit
        assert "score" not in again.table().schema().as_arrow().names
    assert commit(again, wider, 1, [{**r, "addr": {"city": "c", "zip": "z"}, "score": 0.5} for r in batch_rows(3, 3)])
    table = again.table()
    if fmt == "iceberg":
        assert table.current_snapshot().schema_id == table.schema().schema_id
    data = table.to_pyarrow_table() if fmt == "delta" else table.scan().to_arrow()
    assert sorted(zip(data.column("id").to_pylist(), data.column("score").to_pylist(),
                      [a["zip"] for a in data.column("addr").to_pylist()])) == [
        (0, None, None), (1, None, None), (2, None, None), (3, 0.5, "z"), (4, 0.5, "z"), (5, 0.5, "z")]
    with pytest.raises(SinkError, match="columns"):  # not a gain at the end: refused, as before
        make_target(fmt, tmp_path).ensure(table_arrow_schema(T.StructType(SCHEMA.fields[1:]), fmt))
