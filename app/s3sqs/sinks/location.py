"""Where a table's files live (a local directory or an s3:// prefix), and how each library reaches it:
pyarrow on the executors, delta-rs and pyiceberg on the driver. One place, so all three agree."""
from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow.fs as pafs

from ..core.endpoint import Endpoint, s3_filesystem
from ..core.errors import UsageError

S3_MAX_ATTEMPTS = 10


@dataclass(frozen=True)
class Location:
    uri: str                       # "s3://bucket/prefix" or an absolute local path, no trailing "/"
    endpoint: Endpoint = Endpoint()

    @classmethod
    def parse(cls, text: str, flag: str, endpoint: Endpoint = Endpoint()) -> "Location":
        text = (text or "").strip()
        if not text:
            raise UsageError(f"{flag} is empty; give a local path or an s3://bucket/prefix URI")
        if text.startswith("file://"):
            text = urlparse(text).path
        if text.startswith("s3://"):
            p = urlparse(text)
            if not p.netloc:
                raise UsageError(f"{flag} {text!r} has no bucket; write s3://bucket/prefix")
            return cls(f"s3://{p.netloc}/{p.path.strip('/')}".rstrip("/"), endpoint)
        if "://" in text:
            raise UsageError(f"{flag} {text!r}: only local paths and s3:// URIs are supported "
                            "(s3a:// and s3n:// are Hadoop's names for the same thing: write s3://)")
        return cls(os.path.abspath(text).rstrip("/") or "/", endpoint)

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    def join(self, *parts: str) -> str:
        return "/".join([self.uri, *(p.strip("/") for p in parts if p)])

    def child(self, *parts: str) -> "Location":
        return Location(self.join(*parts), self.endpoint)

    # --- pyarrow (executors and compaction) ---
    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The filesystem and this location's path on it: the reader's S3 settings, with more attempts,
        since a failed write costs the whole batch's write."""
        if not self.is_s3:
            return pafs.LocalFileSystem(), self.uri
        return s3_filesystem(self.endpoint.with_attempts(S3_MAX_ATTEMPTS)), self.uri.removeprefix("s3://")

    # --- delta-rs ---
    def delta_storage_options(self) -> dict[str, str] | None:
        if not self.is_s3:
            return None
        # S3 supports conditional writes: a commit file is created only if absent, so the stream and
        # compact-table can commit concurrently without a DynamoDB lock table.
        opts = {"aws_conditional_put": "etag"}
        if self.endpoint.region:
            opts["AWS_REGION"] = self.endpoint.region
        if self.endpoint.url:
            opts["AWS_ENDPOINT_URL"] = self.endpoint.url
            opts["AWS_ALLOW_HTTP"] = "true" if self.endpoint.plain_http else "false"
        return opts


# --- pyiceberg FileIO ---
def iceberg_s3_properties(endpoint: Endpoint) -> dict[str, str]:
    props = {}
    if endpoint.region:
        props["s3.region"] = endpoint.region
    if endpoint.url:
        props["s3.endpoint"] = endpoint.url
    return props
