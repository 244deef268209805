"""The fault proxy's own behaviour, on real sockets: what a client sees when the stand-in behind it is gone."""
from __future__ import annotations

import http.client

import boto3
import pytest
from botocore.exceptions import ClientError

from devtools.fault_proxy import FaultProxy, Faults, object_reads_of
from devtools.local_aws import free_port


def test_an_unreachable_upstream_is_answered_502_naming_it():
    port = free_port()  # nothing listens there
    with FaultProxy(f"http://127.0.0.1:{port}", Faults()) as proxy:
        host, proxy_port = proxy.endpoint_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(proxy_port), timeout=10)
        try:
            conn.request("GET", "/bucket/key")
            resp = conn.getresponse()
            body = resp.read().decode()
        finally:
            conn.close()
    assert resp.status == 502
    assert f"upstream 127.0.0.1:{port} unreachable" in body
    assert "ConnectionRefusedError" in body


def test_a_slow_down_to_a_head_has_no_body_and_the_connection_serves_the_next_request():
    port = free_port()  # nothing listens there: the GET after the HEAD is answered 502
    with FaultProxy(f"http://127.0.0.1:{port}", Faults(slow_down=1.0), applies=lambda m, p: m == "HEAD") as proxy:
        host, proxy_port = proxy.endpoint_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(proxy_port), timeout=10)
        try:
            conn.request("HEAD", "/bucket/key")
            head = conn.getresponse()
            head.read()
            conn.request("GET", "/bucket/key")  # the same connection: no stray body bytes ahead of its answer
            get = conn.getresponse()
            body = get.read().decode()
        finally:
            conn.close()
    assert head.status == 503 and int(head.getheader("Content-Length")) > 0
    assert get.status == 502 and f"upstream 127.0.0.1:{port} unreachable" in body


def test_denied_reads_are_answered_403_access_denied_as_s3_answers_them(moto_endpoint):
    """GET and HEAD of the chosen keys, there or not, are answered as S3 answers a caller that may not read them
    (or one without s3:ListBucket, for a missing key); other keys and other calls go through."""
    direct = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    direct.create_bucket(Bucket="proxy-denies")
    direct.put_object(Bucket="proxy-denies", Key="in/a b.csv", Body=b"x")
    direct.put_object(Bucket="proxy-denies", Key="in/other.csv", Body=b"y")
    deny = object_reads_of("proxy-denies", "in/a b.csv", "in/gone.csv")
    with FaultProxy(moto_endpoint, Faults(), deny=deny) as proxy:
        s3 = boto3.client("s3", endpoint_url=proxy.endpoint_url, region_name="us-east-1")
        for key in ("in/a b.csv", "in/gone.csv"):
            with pytest.raises(ClientError) as get:
                s3.get_object(Bucket="proxy-denies", Key=key)
            assert get.value.response["Error"]["Code"] == "AccessDenied"
            assert get.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
            with pytest.raises(ClientError) as head:  # a HEAD's answer has no body: botocore names the status
                s3.head_object(Bucket="proxy-denies", Key=key)
            assert head.value.response["Error"]["Code"] == "403"
        assert s3.get_object(Bucket="proxy-denies", Key="in/other.csv")["Body"].read() == b"y"
        assert s3.head_object(Bucket="proxy-denies", Key="in/other.csv")["ContentLength"] == 1
        s3.delete_object(Bucket="proxy-denies", Key="in/a b.csv")  # not a read: it goes through
        assert proxy.injected == {"denied": 4}
    assert direct.list_objects_v2(Bucket="proxy-denies")["KeyCount"] == 1
