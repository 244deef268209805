"""Executor-side access to file bytes: a pyarrow filesystem per scheme, with timeouts that suit a busy
machine, and whole-file retries of transient faults.

pyarrow retries S3 requests itself (the standard strategy), but a read that stalls mid-body, a reset
connection or a throttled GET can still surface as an error; a file is read whole before any of its
rows are used, so reading it again from the start is always safe.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from .files import S3File

log = logging.getLogger("s3sqs.reader")

CONNECT_TIMEOUT_SECONDS = 10
# The SDK aborts a transfer that moves less than a byte a second for this long; its default (3 s) fails
# reads on a loaded machine.
REQUEST_TIMEOUT_SECONDS = 30
READ_ATTEMPTS = 5
BACKOFF_SECONDS = 0.5
WHOLE_FILE_BYTES = 64 << 20  # smaller files are fetched in one GET and parsed from memory

# How a failed read is to be treated, from the words of pyarrow's (and the AWS SDK's) error.
_MISSING = ("NoSuchKey", "Path does not exist", "does not exist", "No such file", "NOT_FOUND", "404")
_TRANSIENT = ("curlCode", "NETWORK_CONNECTION", "SlowDown", "503", "500", "Connection reset", "timed out",
              "Timeout", "Throttl", "InternalError", "ServiceUnavailable", "RequestTimeout", "connection",
              "Broken pipe", "EOF", "Couldn't connect")


class MissingFile(FileNotFoundError):
    """The object is not there (deleted after it was announced)."""


@dataclass(frozen=True)
class Endpoint:
    endpoint_url: str | None = None
    region: str | None = None
    max_attempts: int = 3


def s3_filesystem(e: Endpoint) -> pafs.S3FileSystem:
    kwargs: dict = {"region": e.region} if e.region else {}
    if e.endpoint_url:
        p = urlparse(e.endpoint_url)
        kwargs.update(endpoint_override=p.netloc, scheme=p.scheme)
    return pafs.S3FileSystem(connect_timeout=CONNECT_TIMEOUT_SECONDS, request_timeout=REQUEST_TIMEOUT_SECONDS,
                             retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=e.max_attempts),
                             **kwargs)


class Filesystems:
    """The pyarrow filesystem for each scheme a file may have, made when first needed."""

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint
        self._s3: pafs.S3FileSystem | None = None

    def s3(self) -> pafs.S3FileSystem:
        if self._s3 is None:
            self._s3 = s3_filesystem(self.endpoint)
        return self._s3

    def of(self, f: S3File) -> pafs.FileSystem:
        return pafs.LocalFileSystem() if f.scheme == "file" else self.s3()

    def for_location(self, location: str) -> tuple[pafs.FileSystem, str]:
        """(filesystem, root path) of a local path, file:// or s3:// location."""
        if location.startswith("s3://"):
            return self.s3(), location[len("s3://"):].rstrip("/")
        return pafs.LocalFileSystem(), location.removeprefix("file://").rstrip("/")


def classify(error: BaseException) -> str:
    """"missing", "transient" or "bad" (the file itself cannot be read as asked)."""
    if isinstance(error, (FileNotFoundError, MissingFile)):
        return "missing"
    if isinstance(error, (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError,
                          UnicodeDecodeError, EOFError)) and not isinstance(error, OSError):
        return "bad"
    text = str(error)
    if any(m in text for m in _MISSING):
        return "missing"
    if isinstance(error, (OSError, pa.ArrowException)) and any(t.lower() in text.lower() for t in _TRANSIENT):
        return "transient"
    return "bad"


def with_retries(what: str, fn, attempts: int = READ_ATTEMPTS, sleep=time.sleep):
    """Call fn(); on a transient fault wait (exponential backoff with jitter) and call it again."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as e:
            if attempt == attempts or classify(e) != "transient":
                raise
            delay = BACKOFF_SECONDS * 2 ** (attempt - 1) * (0.5 + random.random())
            log.warning("s3-sqs: reading %s failed (%s: %s); attempt %d of %d in %.1f s",
                        what, type(e).__name__, str(e)[:200], attempt + 1, attempts, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def fetch(fs: pafs.FileSystem, f: S3File, compression: str | None) -> pa.Buffer:
    """The whole file, decompressed when asked ("detect": by extension), in memory."""
    with fs.open_input_stream(f.path, compression=compression) as stream:
        return stream.read_buffer()
