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
