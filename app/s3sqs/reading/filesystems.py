"""Executor-side access to file bytes: a pyarrow filesystem per scheme, with timeouts that suit a busy
machine, and whole-file retries of transient faults.

pyarrow retries S3 requests itself (the standard strategy), but a read that stalls mid-body, a reset
connection or a throttled GET can still surface as an error; a file is read whole before any of its
rows are used, so reading it again from the start is always safe.
"""
from __future__ import annotations

import json
import logging
import re
import time

import pyarrow as pa
import pyarrow.fs as pafs

from ..core.endpoint import Endpoint, ensure_parent, s3_filesystem
from ..core.files import S3File
from ..core.retry import retry_call

log = logging.getLogger("s3sqs.reader")

READ_ATTEMPTS = 5
BACKOFF_SECONDS = 0.5
WHOLE_FILE_BYTES = 64 << 20  # smaller files are fetched in one GET and parsed from memory

# How a failed read is to be treated, from the words of pyarrow's (and the AWS SDK's) error.
# S3 answers 403 AccessDenied both for a key the caller may not read and for a missing key when the caller
# has no s3:ListBucket on the bucket: neither is worth a retry, and which one it is cannot be told from here.
_DENIED = ("ACCESS_DENIED", "AccessDenied", "HTTP status 403")
DENIED_REASON = ("HTTP 403: the key may have been deleted (S3 answers 403 for a missing key without s3:ListBucket) "
                 "or the job role may not read it")
_MISSING = ("NoSuchKey", "Path does not exist", "does not exist", "No such file", "NOT_FOUND", "404")
_TRANSIENT = ("curlCode", "NETWORK_CONNECTION", "SlowDown", "503", "500", "Connection reset", "timed out",
              "Timeout", "Throttl", "InternalError", "ServiceUnavailable", "RequestTimeout", "connection",
              "Broken pipe", "EOF", "Couldn't connect")


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


def put_json(filesystems: "Filesystems", location: str, name: str, body: dict, what: str) -> None:
    """One small JSON document at `location`/`name` (local or S3), retried like a read: the quarantine's
    records and the schema's proposals."""
    fs, root = filesystems.for_location(location)
    path = f"{root}/{name}"
    ensure_parent(fs, path)

    def put():
        with fs.open_output_stream(path) as out:
            out.write(json.dumps(body).encode())
    with_retries(f"{path} ({what})", put)


def classify(error: BaseException) -> str:
    """"missing", "denied" (HTTP 403: DENIED_REASON), "transient" or "bad" (the file itself cannot be read as
    asked)."""
    if isinstance(error, FileNotFoundError):
        return "missing"
    if isinstance(error, (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError,
                          UnicodeDecodeError, EOFError)) and not isinstance(error, OSError):
        return "bad"
    text = _words(error)
    if isinstance(error, (OSError, pa.ArrowException)) and any(d in text for d in _DENIED):
        return "denied"
    if any(m in text for m in _MISSING):
        return "missing"
    if isinstance(error, (OSError, pa.ArrowException)) and any(t.lower() in text.lower() for t in _TRANSIENT):
        return "transient"
    return "bad"


# A name as pyarrow quotes it: after a space, up to a quote that ends a word (an apostrophe, as in "Couldn't
# connect", opens none).
_QUOTED = re.compile(r"(?:(?<=\s)|^)'[^']*'(?=[\s:.,;)]|$)")


def _words(error: BaseException) -> str:
    """The error's text without the names pyarrow quotes in it: a key such as 'in/2024-04-04.csv' says
    nothing about what went wrong, and its digits must not read as an HTTP status."""
    return _QUOTED.sub("''", str(error))


def with_retries(what: str, fn, attempts: int = READ_ATTEMPTS, sleep=time.sleep):
    """fn(), again after a transient fault (exponential backoff with jitter): a file is read whole before
    any of its rows are used, so reading it again from the start is always safe."""
    return retry_call(fn, what=f"reading {what}", attempts=attempts, retryable=lambda e: classify(e) == "transient",
                      log=log, base_seconds=BACKOFF_SECONDS, sleep=sleep)


def fetch(fs: pafs.FileSystem, f: S3File, compression: str | None) -> pa.Buffer:
    """The whole file, decompressed when asked ("detect": by extension), in memory."""
    with fs.open_input_stream(f.path, compression=compression) as stream:
        return stream.read_buffer()
