"""A direct write's read task (job/direct_write.py), without Spark: the rows its source reads become the
table's Parquet files, and the task yields one row per file that gives the table sink back each file."""
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import LongType, StringType, StructField, StructType

from s3sqs.job.direct_write import DirectWriteReader
from s3sqs.sinks.table_files import WriteSpec
from s3sqs.sinks.target import WRITTEN_FILES, WRITTEN_FILES_ARROW, WrittenFile

SCHEMA = StructType([StructField("id", LongType()), StructField("day", StringType())])


class Partition:
    batch_end = 42


class Source:
    """Stands in for the s3-sqs reader's offsets and read: two batches of rows."""

    def read(self, partition):
        yield pa.record_batch({"id": pa.array([1, 2, 3], pa.int64()), "day": ["a", "b", "a"]})
        yield pa.record_batch({"id": pa.array([4], pa.int64()), "day": [None]})


def test_a_read_task_writes_its_rows_as_files_and_yields_the_files(tmp_path):
    spec = WriteSpec("delta", str(tmp_path / "t"), ("day",), 128 << 20, -1, "", "")
    out = list(DirectWriteReader(Source(), spec, SCHEMA).read(Partition()))
    assert len(out) == 1 and out[0].schema == WRITTEN_FILES_ARROW
    files = [WrittenFile.from_row(r) for r in out[0].to_pylist()]
    assert sorted((f.partition["day"], f.rows) for f in files if f.partition["day"]) == [("a", 2), ("b", 1)]
    assert [f.rows for f in files if f.partition["day"] is None] == [1]
    for f in files:  # outside Spark there is no batch id: the files are named by the source's batch end
        assert f.relative_path.split("/")[-1].startswith("part-000042-") and f.stats
        assert pq.ParquetFile(f.uri).metadata.num_rows == f.rows and f.uri.endswith(f.relative_path)


def test_the_rows_schema_is_the_same_in_ddl_and_arrow():
    assert WRITTEN_FILES == ", ".join(f"{f.name} {'STRING' if f.type == pa.string() else 'BIGINT'}"
                                      for f in WRITTEN_FILES_ARROW)
    assert [n.split()[0] for n in WRITTEN_FILES.split(", ")] == list(WrittenFile.__dataclass_fields__)
