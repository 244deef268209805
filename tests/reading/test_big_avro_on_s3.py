"""A big Avro file in a bucket of the moto server, read as a task reads it, through a proxy that counts the
object GETs: streamed a few blocks at a time, in a few large reads (fastavro reads a few bytes at a time,
which unbuffered would each be a GET), with every record; and its schema read from its header alone."""
import io

import boto3
import fastavro
import pyarrow as pa
import pytest

from devtools.fault_proxy import FaultProxy, Faults, s3_object_reads
from s3sqs.core.endpoint import Endpoint
from s3sqs.core.files import S3File
from s3sqs.reading import blocks
from s3sqs.reading.file_schema import infer_file
from s3sqs.reading.filesystems import Filesystems
from s3sqs.reading.formats import FormatOptions, avro
from s3sqs.reading.reader import ReadSpec, read_partition

SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string"}]}


def test_a_big_avro_file_on_s3_is_streamed_in_a_few_gets(moto_endpoint, monkeypatch):
    n = 60_000
    body = io.BytesIO()  # uncompressed blocks of about 100 KB: a 6 MB file, over the 4 MiB of a big Avro file
    fastavro.writer(body, fastavro.parse_schema(SCHEMA), ({"id": i, "note": f"{i:08d}" * 12} for i in range(n)),
                    sync_interval=100_000)
    data = body.getvalue()
    assert len(data) > blocks.BIG_COMPRESSED_BYTES
    s3 = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="big-avro")
    etag = s3.put_object(Bucket="big-avro", Key="in/big.avro", Body=data)["ETag"].strip('"')
    monkeypatch.setattr(avro.reader, "PART_BYTES", 1 << 20)  # several parts
    monkeypatch.setattr(avro, "read", lambda *a, **k: pytest.fail("a big Avro file was read whole"))

    gets = []

    def count(method: str, path: str) -> bool:
        if s3_object_reads(method, path):
            gets.append(path)
        return False  # no faults: counting only

    with FaultProxy(moto_endpoint, Faults(), applies=count) as proxy:
        spec = ReadSpec(FormatOptions("avro"), Endpoint(proxy.endpoint_url, "us-east-1"))
        f = S3File("big-avro", "in/big.avro", len(data), etag, event_ms=1_700_000_000_000)
        batches = list(read_partition([f], spec, pa.schema([("id", pa.int64())]), 1))
        assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(n))
        assert 1 <= len(gets) <= 3, gets  # 6 MB in reads of READ_BYTES (8 MiB), not one GET per few bytes
        gets.clear()
        schema = infer_file(Filesystems(spec.endpoint), f, spec, True)
    assert schema.names == ["id", "note"]
    assert len(gets) == 1, gets  # the header alone, in one read (of 1 MiB), not the file nor a GET per field
