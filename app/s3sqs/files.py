"""The one record of a file: what a message announces, what the index stores and what a task reads."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone


@dataclass(frozen=True)
class S3File:
    bucket: str
    key: str
    size: int | None = None
    etag: str | None = None
    version_id: str | None = None
    event_ms: int | None = None      # when the object was created, as the event says (ms since the epoch)
    event_name: str | None = None    # "ObjectCreated:Put", ...; "Listing" for a file found by listing
    seq: int = 0                     # its place in the index; 0 until the index numbers it
    scheme: str = "s3"               # "file" only for local files (tests and benchmarks)

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"

    @property
    def path(self) -> str:
        """The path a pyarrow filesystem of this scheme opens."""
        return f"/{self.key}" if self.scheme == "file" else f"{self.bucket}/{self.key}"

    @property
    def event_time(self) -> datetime | None:
        return None if self.event_ms is None else datetime.fromtimestamp(self.event_ms / 1000, tz=timezone.utc)

    def numbered(self, seq: int) -> "S3File":
        return replace(self, seq=seq)

    def to_json(self) -> bytes:
        # Only what is set: the index holds one of these per file.
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None and v != _DEFAULTS.get(k)},
                          separators=(",", ":")).encode()

    @staticmethod
    def from_json(raw: bytes) -> "S3File":
        return S3File(**json.loads(raw))


def ms(t: datetime | None) -> int | None:
    return None if t is None else int(t.timestamp() * 1000)


_DEFAULTS = {"scheme": "s3"}
