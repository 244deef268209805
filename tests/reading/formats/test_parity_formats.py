"""ORC, Avro, text and binaryFile: the same local files through Spark's own reader and through this source's
reader give the same rows (tests/support/parity.py), on the Spark version under test (make test runs both).

Avro: Spark's Avro reader is a separate jar (spark-avro), which a JVM takes only when it starts; the tests share
one JVM, so Spark's Avro reads run once, in a Spark of their own in a subprocess that loads the jar from Maven
Central (4.0.2's own; for 4.3 the newest published, 4.2.0, as 4.3.0 is not published). Without it those
comparisons skip; the rows are always compared with fastavro's own decoding and Spark's documented mapping.
"""
from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pytest

from s3sqs.reading.formats import FormatOptions, reader_of
from tests.support.parity import assert_same_rows, canonical, local_file, parity_session, source_rows

pytestmark = pytest.mark.spark

EVENT_MS = 1_700_000_000_000  # the event time parity.local_file gives every file
AVRO_JAR = {"4.0": "4.0.2", "4.3": "4.2.0"}  # spark-avro 4.3.0 is not on Maven Central (checked 2026-11)


@pytest.fixture(scope="module")
def spark():
    with parity_session("formats") as session:
        yield session


# ------------------------------------------------------------------------------------------------ ORC

ORC_DDL = ("id INT, big BIGINT, ratio DOUBLE, name STRING, flag BOOLEAN, price DECIMAL(10,2), ts TIMESTAMP, "
           "day DATE, address STRUCT<city: STRING, zip: INT>, tags ARRAY<STRING>, attrs MAP<STRING, INT>")


def _spark_orc(spark, path: Path) -> Path:
    rows = [(1, 10_000_000_000, 1.5, "ä ü", True, decimal.Decimal("12.34"), dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
             dt.date(2024, 1, 2), ("Berlin", 10115), ["a", "b"], {"k": 1}),
            (2, None, None, None, None, None, None, None, None, None, None),
            (3, -1, -0.0, "", False, decimal.Decimal("-0.01"), dt.datetime(1969, 12, 31, 23, 59, 59),
             dt.date(1900, 1, 1), (None, None), [], {})]
    spark.createDataFrame(rows, ORC_DDL).coalesce(1).write.mode("overwrite").orc(str(path))
    return next(path.glob("part-*.orc"))


def test_orc_written_by_spark_reads_the_same_with_every_type_and_a_missing_column(spark, tmp_path):
    path = _spark_orc(spark, tmp_path / "spark_orc")
    rows = assert_same_rows(spark, "orc", [path], ORC_DDL + ", missing STRING")
    assert len(rows) == 3 and rows[0]["address"] == {"city": "Berlin", "zip": 10115}
    assert all(r["missing"] is None for r in rows)
    # A subset of the columns, in another order, with a wider type for one of them.
    assert_same_rows(spark, "orc", [path], "name STRING, id INT, price DECIMAL(10,2)")


def test_orc_infer_gives_the_schema_spark_infers(spark, tmp_path):
    from s3sqs.planning.source import arrow_schema
    path = _spark_orc(spark, tmp_path / "infer_orc")
    theirs = arrow_schema(spark.read.orc(str(path)).schema)
    ours = reader_of("orc").infer(pa.BufferReader(pa.py_buffer(path.read_bytes())), FormatOptions("orc"))
    assert _types(ours) == _types(theirs)


def test_orc_written_by_pyarrow_reads_the_same(spark, tmp_path):
    path = tmp_path / "arrow.orc"
    orc.write_table(pa.table({
        "id": pa.array([1, 2, None], pa.int64()),
        "ts": pa.array([dt.datetime(2024, 5, 6, 7, 8, 9, 10), None, dt.datetime(2000, 1, 1)], pa.timestamp("us")),
        "amount": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-3.25")], pa.decimal128(9, 2)),
        "nested": pa.array([{"a": [1, 2], "b": {"c": "x"}}, None, {"a": None, "b": None}],
                           pa.struct([("a", pa.list_(pa.int32())), ("b", pa.struct([("c", pa.string())]))])),
    }), path)
    assert_same_rows(spark, "orc", [path], "id BIGINT, ts TIMESTAMP, amount DECIMAL(9,2), "
                     "nested STRUCT<a: ARRAY<INT>, b: STRUCT<c: STRING>>, absent INT")
    # Names that differ only by case match (Spark's default), at the top and inside structs; a nested field
    # the file lacks is null.
    assert_same_rows(spark, "orc", [path], "ID BIGINT, Nested STRUCT<A: ARRAY<INT>, b: STRUCT<C: STRING, z: INT>>")


# ----------------------------------------------------------------------------------------------- text

TEXTS = {
    "lf.txt": b"first\nsecond\n\nfourth after an empty line\n",
    "crlf.txt": b"a\r\nb\r\n\r\nd",
    "cr_mixed.txt": b"one\rtwo\r\nthree\n\rfive\r",
    "unicode.txt": "grüße\n日本語\n😀 emoji\n".encode(),
    "only_newline.txt": b"\n",
    "pipes.txt": b"x|y||z|",
    "no_end.txt": b"no newline at the end",
}


@pytest.fixture(scope="module")
def text_files(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("text")
    paths = []
    for name, content in TEXTS.items():
        (d / name).write_bytes(content)
        paths.append(d / name)
    (d / "lines.txt.gz").write_bytes(gzip.compress(b"zipped 1\nzipped 2\r\n\nzipped 4\n"))
    return paths + [d / "lines.txt.gz"]


@pytest.mark.parametrize("options", [{}, {"lineSep": "|"}, {"lineSep": "\r\n"}, {"lineSep": "\n"},
                                     {"wholetext": "true"}], ids=["default", "pipe", "crlf", "lf", "wholetext"])
def test_text_lines_as_spark_splits_them(spark, text_files, options):
    rows = assert_same_rows(spark, "text", text_files, "value STRING", options)
    if not options:  # a check on the reference itself: empty lines are rows, a final newline opens none
        values = [r["value"] for r in rows]
        assert values.count("") == 5 and "zipped 2" in values and "😀 emoji" in values


def test_text_fills_the_one_string_column_whatever_its_name(spark, text_files):
    rows = assert_same_rows(spark, "text", text_files[:1], "line STRING")
    assert rows[0] == {"line": "first"}


def test_text_keeps_bytes_that_are_not_utf8_as_spark_does(spark, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("café\nnaïve\n".encode("latin-1"))
    ddl = "value STRING"
    theirs = spark.read.schema(ddl).text(str(path)).selectExpr("hex(value) AS h").toArrow().column("h").to_pylist()
    ours = source_rows_bytes(spark, path, ddl)
    assert ours == [bytes.fromhex(h) for h in theirs] == [b"caf\xe9", b"na\xefve"]


def source_rows_bytes(spark, path: Path, ddl: str) -> list[bytes]:
    from s3sqs.config.options import parse_options
    from s3sqs.planning.source import arrow_schema, read_spec
    from s3sqs.reading.reader import read_partition
    from tests.support.parity import QUEUE
    opts = parse_options({"fileFormat": "text", "queueUrl": QUEUE, "stateLocation": str(path.parent / "_st")})
    schema = arrow_schema(spark.createDataFrame([], ddl).schema)
    batches = list(read_partition([local_file(path)], read_spec(opts, schema.names), schema, batch_end=1))
    return pa.Table.from_batches(batches, schema).column("value").cast(pa.binary()).to_pylist()


# ----------------------------------------------------------------------------------------- binaryFile

BINARY_DDL = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"


def test_binary_files_give_path_time_length_and_raw_bytes_as_spark(spark, tmp_path):
    d = tmp_path / "dir with space"
    d.mkdir()
    files = {"blob.bin": bytes(range(256)) * 3, "x%20y #.dat": b"\x00", "packed.gz": gzip.compress(b"stays packed")}
    for name, content in files.items():
        (d / name).write_bytes(content)
        os.utime(d / name, ns=(EVENT_MS * 1_000_000, EVENT_MS * 1_000_000))  # the event time parity gives
    rows = assert_same_rows(spark, "binaryFile", sorted(d.iterdir()), BINARY_DDL)
    by_path = {r["path"]: r for r in rows}
    assert by_path[f"file:{d}/x%20y #.dat"]["content"] == b"\x00"  # Hadoop's path form, not percent-encoded
    assert by_path[f"file:{d}/packed.gz"]["content"] == files["packed.gz"]  # not decompressed
    assert {r["modificationTime"] for r in rows} == {dt.datetime.fromtimestamp(EVENT_MS / 1000, dt.timezone.utc)}


def test_binary_file_over_max_file_size_is_quarantined_naming_size_limit_and_option(spark, tmp_path):
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    (tmp_path / "small.bin").write_bytes(b"y" * 10)
    ours = source_rows(spark, "binaryFile", [tmp_path / "big.bin", tmp_path / "small.bin"], BINARY_DDL,
                       {"maxFileSize": "1k"})
    assert [r["length"] for r in ours] == [10]
    error = _quarantined(tmp_path / "_parity_state")["big.bin"]
    assert "2048 bytes" in error and "1024 bytes" in error and "maxFileSize" in error


# ----------------------------------------------------------------------------------------------- Avro

AVRO_SCHEMA = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "qty", "type": ["null", "int"]},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": ["null", "double"]},
    {"name": "ok", "type": "boolean"},
    {"name": "name", "type": ["null", "string"]},
    {"name": "raw", "type": "bytes"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "fprice", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                                "precision": 12, "scale": 3}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "local_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
    {"name": "hash", "type": {"type": "fixed", "name": "H4", "size": 4}},
    {"name": "customer", "type": ["null", {"type": "record", "name": "Customer", "fields": [
        {"name": "cid", "type": "int"}, {"name": "emails", "type": {"type": "array", "items": "string"}},
        {"name": "tier", "type": "State"}]}]},
    {"name": "props", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "n", "type": "int"}]}}},
    {"name": "either", "type": ["null", "int", "string"]},
    {"name": "wide", "type": ["int", "long"]},
]}
AVRO_DDL = ("id BIGINT, qty INT, ratio FLOAT, score DOUBLE, ok BOOLEAN, name STRING, raw BINARY, "
            "price DECIMAL(10,2), fprice DECIMAL(12,3), day DATE, at_ms TIMESTAMP, at_us TIMESTAMP, "
            "local_us TIMESTAMP_NTZ, ref STRING, state STRING, hash BINARY, "
            "customer STRUCT<cid: INT, emails: ARRAY<STRING>, tier: STRING>, props MAP<STRING, BIGINT>, "
            "lines ARRAY<STRUCT<sku: STRING, n: INT>>, either STRUCT<member0: INT, member1: STRING>, wide BIGINT")
UTC = dt.timezone.utc
# The schema less what polars cannot decode as Spark does (a map, unions of several types, a nested enum):
# these files are decoded a column at a time (avro_columns.py), the others record by record.
_BUYER = {"type": "record", "name": "Buyer", "fields": [{"name": "cid", "type": "int"},
                                                         {"name": "emails", "type": {"type": "array", "items": "string"}}]}
AVRO_COLUMNAR_SCHEMA = {**AVRO_SCHEMA, "fields": [
    f for f in AVRO_SCHEMA["fields"] if f["name"] not in ("customer", "props", "either", "wide")] + [
    {"name": "buyer", "type": ["null", _BUYER]}]}
AVRO_COLUMNAR_DDL = AVRO_DDL.split(", customer")[0] + (", lines ARRAY<STRUCT<sku: STRING, n: INT>>, "
                                                        "buyer STRUCT<cid: INT, emails: ARRAY<STRING>>")


def _avro_records() -> list[dict]:
    full = {"id": 1, "qty": 3, "ratio": 0.5, "score": 2.25, "ok": True, "name": "grüße", "raw": b"\x00\xff",
            "price": decimal.Decimal("12.34"), "fprice": decimal.Decimal("-1.234"), "day": dt.date(2024, 2, 29),
            "at_ms": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
            "at_us": dt.datetime(1960, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
            "local_us": dt.datetime(2024, 1, 2, 3, 4, 5, 6), "ref": uuid.UUID(int=42), "state": "PAID",
            "hash": b"abcd", "customer": {"cid": 7, "emails": ["a@x", "b@x"], "tier": "NEW"},
            "props": {"p": 1, "q": None}, "lines": [{"sku": "s1", "n": 2}], "either": "text", "wide": 5}
    sparse = {**full, "id": 2, "qty": None, "score": None, "name": None, "at_us": None, "customer": None,
              "props": {}, "lines": [], "either": 9, "state": "NEW"}
    return [full, sparse, {**sparse, "id": 3, "either": None, "wide": 1 << 40}]


@pytest.fixture(scope="module")
def avro_files(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("avro")
    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    paths = []
    for codec in ("null", "deflate", "snappy", "zstandard"):
        p = d / f"orders-{codec}.avro"
        with open(p, "wb") as out:
            fastavro.writer(out, parsed, _avro_records(), codec=codec)
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def avro_columnar_files(tmp_path_factory) -> list[Path]:
    from fastavro.schema import expand_schema
    from s3sqs.reading.formats.avro.columnar import decodes_as_spark
    from s3sqs.reading.formats.avro.reader import COLUMNAR_RECORDS
    parsed = fastavro.parse_schema(AVRO_COLUMNAR_SCHEMA)
    assert decodes_as_spark(expand_schema(parsed))
    d = tmp_path_factory.mktemp("avro_columnar")
    three = [{**{k: v for k, v in r.items() if k not in ("customer", "props", "either", "wide")},
              "buyer": r["customer"] and {"cid": r["customer"]["cid"], "emails": r["customer"]["emails"]}}
             for r in _avro_records()]
    records = [{**r, "id": i} for i, r in enumerate(three * 70)]
    assert len(records) >= COLUMNAR_RECORDS  # decoded by polars, not record by record
    paths = []
    for codec in ("null", "snappy"):
        paths.append(d / f"buyers-{codec}.avro")
        with open(paths[-1], "wb") as out:
            fastavro.writer(out, parsed, records, codec=codec)
    return paths


def test_avro_rows_are_fastavro_s_values_in_spark_s_types(spark, avro_files):
    ours = source_rows(spark, "avro", avro_files[:1], AVRO_DDL + ", absent STRING")
    expected = []
    for rec in _avro_records():  # fastavro's own values, as Spark documents their types
        row = {**rec, "ref": str(rec["ref"]), "props": list(rec["props"].items()), "absent": None,
               "either": None if rec["either"] is None else {"member0": rec["either"], "member1": None}
               if isinstance(rec["either"], int) else {"member0": None, "member1": rec["either"]}}
        expected.append(row)
    assert canonical(ours) == canonical(expected)
    assert ours[0]["at_ms"] == dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert ours[0]["local_us"] == dt.datetime(2024, 1, 2, 3, 4, 5, 6) and ours[0]["local_us"].tzinfo is None
    # Every codec decodes to the same rows.
    assert canonical(source_rows(spark, "avro", avro_files, AVRO_DDL)) == canonical(
        [{k: v for k, v in r.items() if k != "absent"} for r in expected] * len(avro_files))


# Spark's Avro reader, in a Spark of its own (it needs the spark-avro jar at JVM start): writes Avro with Spark
# (a SQL query per file), then reads each case, saving the schema (JSON) and the rows (Arrow IPC) per case.
AVRO_REFERENCE = r"""
import json, sys
import pyarrow.ipc as ipc
from pyspark.sql import SparkSession
jobs, out = json.load(open(sys.argv[1])), sys.argv[2]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.session.timeZone", "UTC").config("spark.jars.packages", jobs["package"]).getOrCreate())
try:
    for w in jobs["write"]:
        spark.sql(w["sql"]).coalesce(1).write.format("avro").save(w["path"])
    for i, r in enumerate(jobs["read"]):
        reader = spark.read.format("avro")
        df = (reader.schema(r["ddl"]) if r["ddl"] else reader).load(r["paths"])
        open(f"{out}/{i}.json", "w").write(df.schema.json())
        if r["ddl"]:
            table = df.toArrow()
            with ipc.new_file(f"{out}/{i}.arrow", table.schema) as f:
                f.write_table(table)
finally:
    spark.stop()
"""
AVRO_CASES_DDL = "ID BIGINT, CUSTOMER STRUCT<CID: INT, Tier: STRING, extra: INT>"
SPARK_WRITTEN_DDL = ("id BIGINT, s STRING, d DECIMAL(5,2), ts TIMESTAMP, day DATE, xs ARRAY<INT>, "
                     "m MAP<STRING, STRING>, st STRUCT<a: STRING, b: INT>")
SPARK_WRITTEN_SQL = (
    "SELECT CAST(1 AS BIGINT) id, 'a' s, CAST(1.10 AS DECIMAL(5,2)) d, TIMESTAMP'2024-01-01 12:00:00' ts, "
    "DATE'2024-01-01' day, array(1, 2) xs, map('k', 'v', 'j', 'w') m, named_struct('a', 'x', 'b', 2) st "
    "UNION ALL SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL")


@pytest.fixture(scope="module")
def spark_avro(avro_files, avro_columnar_files, tmp_path_factory) -> dict:
    """Spark's Avro reader's results: {"cases": [(schema, rows or None)], "written": the file Spark wrote}."""
    import pyspark
    jar = AVRO_JAR.get(".".join(pyspark.__version__.split(".")[:2]))
    if not jar or os.environ.get("S3SQS_NO_SPARK_AVRO"):
        pytest.skip(f"no spark-avro jar for Spark {pyspark.__version__}")
    d = tmp_path_factory.mktemp("spark_avro")
    written = d / "written"
    jobs = {"package": f"org.apache.spark:spark-avro_2.13:{jar}",
            "write": [{"sql": SPARK_WRITTEN_SQL, "path": str(written)}],
            "read": [{"paths": [str(p) for p in avro_files], "ddl": AVRO_DDL + ", absent STRING"},
                     {"paths": [str(avro_files[0])], "ddl": "wide BIGINT, name STRING, customer STRUCT<cid: INT>"},
                     {"paths": [str(avro_files[0])], "ddl": None},
                     {"paths": [str(written)], "ddl": SPARK_WRITTEN_DDL + ", absent INT"},
                     {"paths": [str(avro_files[0])], "ddl": AVRO_CASES_DDL},
                     {"paths": [str(p) for p in avro_columnar_files], "ddl": AVRO_COLUMNAR_DDL}]}
    (d / "jobs.json").write_text(json.dumps(jobs))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    r = subprocess.run([sys.executable, "-c", AVRO_REFERENCE, str(d / "jobs.json"), str(d)], env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        if any(m in r.stderr for m in ("unresolved dependency", "module not found", "UnknownHostException",
                                       "Failed to find data source: avro")):
            pytest.skip(f"spark-avro {jar} could not be loaded here (no Maven Central?)")
        raise AssertionError(f"Spark's Avro reader failed:\n{r.stderr[-3000:]}")
    from pyspark.sql.types import StructType
    cases = []
    for i, job in enumerate(jobs["read"]):
        schema = StructType.fromJson(json.loads((d / f"{i}.json").read_text()))
        rows = pa.ipc.open_file(d / f"{i}.arrow").read_all().to_pylist() if job["ddl"] else None
        cases.append((schema, rows))
    return {"cases": cases, "written": next(written.glob("part-*.avro"))}


def test_avro_reads_as_spark_s_avro_reader_reads_it(spark, spark_avro, avro_files):
    assert_same_as(spark_avro["cases"][0][1], source_rows(spark, "avro", avro_files, AVRO_DDL + ", absent STRING"))
    ddl = "wide BIGINT, name STRING, customer STRUCT<cid: INT>"
    assert_same_as(spark_avro["cases"][1][1], source_rows(spark, "avro", avro_files[:1], ddl))


def test_avro_decoded_by_columns_reads_as_spark_s_avro_reader_reads_it(spark, spark_avro, avro_columnar_files):
    theirs = spark_avro["cases"][5][1]
    assert len(theirs) == 420 and {r["buyer"]["cid"] if r["buyer"] else None for r in theirs} == {7, None}
    assert_same_as(theirs, source_rows(spark, "avro", avro_columnar_files, AVRO_COLUMNAR_DDL))


def test_avro_names_that_differ_only_by_case_match_as_in_spark(spark, spark_avro, avro_files):
    assert_same_as(spark_avro["cases"][4][1], source_rows(spark, "avro", avro_files[:1], AVRO_CASES_DDL))
    assert {r["ID"] for r in spark_avro["cases"][4][1]} == {1, 2, 3}


def test_avro_infer_gives_the_schema_spark_infers(spark_avro, avro_files):
    from s3sqs.planning.source import arrow_schema
    theirs = arrow_schema(spark_avro["cases"][2][0])
    ours = reader_of("avro").infer(pa.py_buffer(avro_files[0].read_bytes()), FormatOptions("avro"))
    assert _types(ours) == _types(theirs)
    assert [f.nullable for f in ours] == [f.nullable for f in theirs] == [True] * len(ours)  # asNullable


def test_avro_written_by_spark_reads_the_same(spark, spark_avro):
    path = spark_avro["written"]  # snappy, Spark's default codec
    theirs = spark_avro["cases"][3][1]
    assert_same_as(theirs, source_rows(spark, "avro", [path], SPARK_WRITTEN_DDL + ", absent INT"))
    assert len(theirs) == 2 and sorted(dict(r["m"] or {}).get("k") or "" for r in theirs) == ["", "v"]


def _types(schema: pa.Schema) -> list[tuple[str, str]]:
    return [(f.name, str(f.type).replace(" not null", "")) for f in schema]


def assert_same_as(theirs: list[dict], ours: list[dict]) -> None:
    """The same rows in any order, each map's entries in any order too (Spark's Avro reader gives a Java
    HashMap's order, this source the file's)."""
    def unordered(v):
        if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return sorted((unordered(k), unordered(x)) for k, x in v)
        if isinstance(v, list):
            return [unordered(x) for x in v]
        if isinstance(v, dict):
            return {k: unordered(x) for k, x in v.items()}
        return v
    theirs, ours = [unordered(r) for r in theirs], [unordered(r) for r in ours]
    assert canonical(ours) == canonical(theirs), f"\n spark: {theirs[:3]}\n ours:  {ours[:3]}"


# ----------------------------------------------------------------------------------- not the format

@pytest.mark.parametrize("fmt,name", [("orc", "ORC"), ("avro", "Avro")])
def test_a_csv_file_read_as_a_typed_format_is_quarantined_naming_the_format(spark, tmp_path, fmt, name):
    path = tmp_path / "data.csv"
    path.write_text("id,name\n1,a\n2,b\n")
    assert source_rows(spark, fmt, [path], "id INT, name STRING") == []
    error = _quarantined(tmp_path / "_parity_state")["data.csv"]
    assert f"not an {name} file" in error and f"fileFormat ({fmt})" in error


def _quarantined(state: Path) -> dict[str, str]:
    """file name -> the error its quarantine record gives."""
    out = {}
    for rec in state.rglob("batches/*/*.json"):
        doc = json.loads(rec.read_text())
        out[doc["file"].rsplit("/", 1)[-1]] = doc["error"]
    assert out, f"no quarantine record under {state}"
    return out
