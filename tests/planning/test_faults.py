"""Transient faults between the source and AWS cost time, never data: a proxy on 127.0.0.1 in front of
the moto server delays answers, answers 503 SlowDown, drops connections, cuts bodies short and stalls
them for longer than the AWS SDK's default low-speed limit allows."""
import pytest

from devtools.fault_proxy import FaultProxy, Faults, s3_reads_and_sqs
from devtools.committed import committed_rows
from tests.planning.test_stream import run_until_drained, source_options, spark  # noqa: F401  (fixture)
from tests.support.aws import bucket_to_queue
from tests.support.spark import only_on_emr_spark

pytestmark = [pytest.mark.spark, only_on_emr_spark]  # the S3 read path is the same on every Spark
FILES, ROWS = 30, 20


def test_a_batch_completes_through_delays_503s_drops_and_cut_bodies(spark, moto_endpoint, tmp_path):  # noqa: F811
    w = bucket_to_queue(moto_endpoint)
    for f in range(FILES):
        w.put(f"faults/part {f}.csv", "".join(f"{f * ROWS + i}\n" for i in range(ROWS)).encode())
    faults = Faults(slow_down=0.15, drop=0.1, cut=0.15, stall=0.1, delay=0.2, max_delay=0.5)
    with FaultProxy(moto_endpoint, faults, s3_reads_and_sqs, seed=7) as proxy:
        opts = source_options(w, tmp_path, onBadFile="fail", **{"sqs.visibilityTimeoutSeconds": "5"})
        opts["endpointUrl"] = proxy.endpoint_url
        run_until_drained(spark, w, tmp_path, "id LONG", opts, timeout=300)
    ids = sorted(r[0] for r in committed_rows(tmp_path / "out", ["id"]))
    assert ids == list(range(FILES * ROWS))  # every row, once; no file was set aside
    assert min(proxy.injected[k] for k in ("slow_down", "drop", "cut", "stall", "delay")) > 0, proxy.injected
