"""The fault proxy's own behaviour, on real sockets: what a client sees when the stand-in behind it is gone."""
from __future__ import annotations

import http.client

from devtools.fault_proxy import FaultProxy, Faults
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
