"""Which AWS (or stand-in for it) a process talks to: one value, handed from the options to every client
and filesystem, the executors' included."""
from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlparse

CONNECT_TIMEOUT_SECONDS = 10
# The SDK aborts a transfer that moves less than a byte a second for this long; its default (3 s) fails
# reads on a loaded machine.
REQUEST_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class Endpoint:
    url: str | None = None        # an S3/SQS-compatible endpoint (the local stand-in); None: AWS's own
    region: str | None = None
    max_attempts: int = 3         # per request, with the SDKs' standard retry mode

    def with_attempts(self, n: int) -> "Endpoint":
        return replace(self, max_attempts=n)

    @property
    def plain_http(self) -> bool:
        return bool(self.url and self.url.startswith("http://"))


def s3_filesystem(e: Endpoint):
    """pyarrow's S3 filesystem for this endpoint, with timeouts that suit a busy machine."""
    import pyarrow.fs as pafs

    kwargs: dict = {"region": e.region} if e.region else {}
    if e.url:
        p = urlparse(e.url)
        kwargs.update(endpoint_override=p.netloc, scheme=p.scheme)
    return pafs.S3FileSystem(connect_timeout=CONNECT_TIMEOUT_SECONDS, request_timeout=REQUEST_TIMEOUT_SECONDS,
                             retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=e.max_attempts),
                             **kwargs)


def ensure_parent(fs, path: str) -> None:
    """The folder `path` goes in, on a local filesystem. Not on S3, which has no folders: there pyarrow's
    create_dir HEADs the bucket and writes a marker object for every level up to the bucket's top, calls a job
    role (its prefixes only, no bucket-wide listing) may not make."""
    import pyarrow.fs as pafs

    if isinstance(fs, pafs.LocalFileSystem):
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
