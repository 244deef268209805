"""An HTTP proxy on 127.0.0.1 that stands between the code and the local AWS stand-in and misbehaves
on purpose: it delays answers, answers 503 SlowDown, drops connections before answering, cuts
bodies short and stalls them midway, each at a rate, for the requests a rule picks. Tests and the chaos script use it to show
that transient faults cost time, never data. It also answers 403 AccessDenied, every time, to the reads another rule
picks (`deny`), as S3 answers a caller that may not read a key, or one without s3:ListBucket asking for a missing key.
"""
from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import unquote, urlparse, urlsplit

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")
ACCESS_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
                 b"<Message>Access Denied</Message></Error>")


@dataclass(frozen=True)
class Faults:
    slow_down: float = 0.0   # answer 503 SlowDown without asking upstream
    drop: float = 0.0        # close the connection without an answer (after asking upstream)
    cut: float = 0.0         # send the headers and half the body, then close
    stall: float = 0.0       # send half the body, go quiet for `stall_seconds`, then send the rest
    stall_seconds: float = 4.0  # longer than the AWS SDK's default low-speed window (3 s)
    delay: float = 0.0       # the chance of a delay of up to `max_delay` seconds
    max_delay: float = 1.0


def s3_object_reads(method: str, path: str) -> bool:
    """GETs of objects (not of buckets or of SQS, which posts to /)."""
    return method == "GET" and path.count("/") >= 2 and not path.startswith("/moto-api")


def object_reads_of(bucket: str, *keys: str) -> Callable[[str, str], bool]:
    """GETs and HEADs of these objects (path-style, as the stand-in is addressed), whatever their query string."""
    paths = {f"/{bucket}/{key}" for key in keys}
    return lambda method, path: method in ("GET", "HEAD") and unquote(urlsplit(path).path) in paths


def s3_reads_and_sqs(method: str, path: str) -> bool:
    """Object GETs and every SQS call (SQS's JSON protocol posts to the queue URL or /)."""
    return s3_object_reads(method, path) or method == "POST"


class FaultProxy:
    def __init__(self, upstream: str, faults: Faults, applies: Callable[[str, str], bool] = s3_object_reads,
                 seed: int = 0, deny: Callable[[str, str], bool] = lambda method, path: False):
        """`deny`: the requests answered 403 AccessDenied, always, without asking upstream (object_reads_of)."""
        self.upstream = urlparse(upstream)
        self.faults = faults
        self.applies = applies
        self.deny = deny
        self.injected: Counter = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _draw(self, method: str, path: str) -> tuple[str | None, float]:
        if not self.applies(method, path):
            return None, 0.0
        f = self.faults
        with self._lock:
            delay = self._rng.random() * f.max_delay if self._rng.random() < f.delay else 0.0
            roll = self._rng.random()
            fault = None
            # A body cut short is a fault of streamed object reads; clients of small JSON answers (SQS) do
            # not check lengths, so there it would be a corrupt answer rather than a transient fault.
            cut = f.cut if s3_object_reads(method, path) else 0.0
            stall = f.stall if s3_object_reads(method, path) else 0.0
            for name, rate in (("slow_down", f.slow_down), ("drop", f.drop), ("cut", cut), ("stall", stall)):
                if roll < rate:
                    fault = name
                    break
                roll -= rate
            if fault:
                self.injected[fault] += 1
            if delay:
                self.injected["delay"] += 1
        return fault, delay

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.deny(self.command, self.path):
                    with proxy._lock:
                        proxy.injected["denied"] += 1
                    self._reply(403, "application/xml", ACCESS_DENIED)
                    return
                fault, delay = proxy._draw(self.command, self.path)
                if delay:
                    time.sleep(delay)
                if fault == "slow_down":
                    self._reply(503, "application/xml", SLOW_DOWN)
                    return
                up = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                    headers["Host"] = proxy.upstream.netloc
                    up.request(self.command, self.path, body=body or None, headers=headers)
                    resp = up.getresponse()
                    data = resp.read()
                except OSError as e:  # the stand-in is gone (a test's teardown): answer as a gateway does
                    text = f"upstream {proxy.upstream.netloc} unreachable: {type(e).__name__}: {e}"
                    self._reply(502, "text/plain", text.encode(), close=True)
                    return
                finally:
                    up.close()
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", resp.getheader("Content-Length", "0")
                                 if self.command == "HEAD" else str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if fault == "stall" and len(data) > 1:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    time.sleep(proxy.faults.stall_seconds)
                    self.wfile.write(data[len(data) // 2:])
                    return
                if fault == "cut" and len(data) > 1:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(data)

            def _reply(self, status: int, content_type: str, body: bytes, close: bool = False) -> None:
                """An answer of the proxy's own, not the stand-in's. A HEAD's answer has no body: bytes after
                its headers would be read as the start of the connection's next response."""
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        return Handler
