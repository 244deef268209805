"""The fault proxy's own behaviour, on real sockets: what a client sees when the stand-in behind it is gone."""
from __future__ import annotations

import http.client
import socket

from devtools.fault_proxy import FaultProxy, Faults


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def test_an_unreachable_upstream_is_answered_502_naming_it():
    port = _closed_port()
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
