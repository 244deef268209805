"""The source cleaner's settings: `cleanSource`, `cleanSourceRetention` and `sourceArchiveLocation`.

Cleaning is a setting of the stack, not of one query: under fan-out, one consumer that archived or deleted
what it had read would take files from the others. cdk.json's `sourceCleaning` holds the three (validated
here, through infra/config.py); the stack publishes them in its `SourceCleaning` output, and `source-state
clean` reads them back through the same function. A query given them as source options is told so
(options.py). Pure: no AWS call, no pydantic.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..core.errors import UsageError
from ..core.names import did_you_mean
from ..core.units import parse_duration_seconds
from ..core.vocabulary import CleanSource

CLEAN_SOURCE, RETENTION, ARCHIVE = "cleanSource", "cleanSourceRetention", "sourceArchiveLocation"
NAMES = (CLEAN_SOURCE, RETENTION, ARCHIVE)
DEFAULT_RETENTION = "30d"
MIN_DELETE_RETENTION_SECONDS = 86400.0
# Auto Loader's MOVE is this source's archive.
_MODE_ALIASES = {"move": CleanSource.ARCHIVE}


class CleanSettingsError(UsageError):
    """A cleaning setting is wrong; the message names it and the fix (`setting` and `reason` apart, for
    surfaces that spell the setting's place their own way)."""

    def __init__(self, setting: str, reason: str, shown: str | None = None):
        super().__init__(f"{shown or setting}: {reason}")
        self.setting, self.reason = setting, reason


@dataclass(frozen=True)
class CleanSettings:
    mode: CleanSource = CleanSource.OFF
    retention_seconds: float = 30 * 86400.0
    retention_text: str = DEFAULT_RETENTION
    archive_bucket: str | None = None
    archive_prefix: str = ""  # "" or ending in "/"

    @property
    def enabled(self) -> bool:
        return self.mode != CleanSource.OFF

    @property
    def archive_uri(self) -> str | None:
        return None if self.archive_bucket is None else f"s3://{self.archive_bucket}/{self.archive_prefix}"

    def archive_key(self, key: str) -> str:
        """Where a source key goes in the archive: the archive prefix, then the key as it was."""
        return f"{self.archive_prefix}{key}"

    def as_settings(self) -> dict[str, str]:
        """The three settings as cdk.json spells them (what the stack publishes)."""
        out = {CLEAN_SOURCE: str(self.mode), RETENTION: self.retention_text}
        if self.archive_uri:
            out[ARCHIVE] = self.archive_uri
        return out


def parse_clean_settings(raw: Mapping[str, Any], name_of=lambda n: n) -> CleanSettings:
    """Validate the three settings (absent or None: the default). `name_of` spells a setting's name as the
    surface does (`sourceCleaning.cleanSource` in cdk.json). Raises CleanSettingsError."""
    unknown = sorted(set(raw) - set(NAMES))
    if unknown:
        first = unknown[0]
        raise CleanSettingsError(first, f"unknown setting{did_you_mean(first, NAMES)}; allowed: {', '.join(NAMES)}",
                                 name_of(first))
    mode = _mode(raw.get(CLEAN_SOURCE), name_of)
    text = raw.get(RETENTION)
    text = DEFAULT_RETENTION if text is None else str(text).strip()
    try:
        seconds = parse_duration_seconds(text, bare_unit=None)
    except ValueError:
        raise CleanSettingsError(RETENTION, f"{text!r} is not a duration; allowed: a duration with a unit, such as "
                                            "30d, 12h or 90m", name_of(RETENTION)) from None
    if seconds <= 0:
        raise CleanSettingsError(RETENTION, f"must be positive, got {text!r}", name_of(RETENTION))
    if mode == CleanSource.DELETE and seconds < MIN_DELETE_RETENTION_SECONDS:
        raise CleanSettingsError(RETENTION, f"{text!r} is too short to delete after; allowed: at least 1d with "
                                            f"{CLEAN_SOURCE} delete (a deleted file cannot be read again), or "
                                            f"{CLEAN_SOURCE} archive", name_of(RETENTION))
    location = raw.get(ARCHIVE)
    if location is not None and not str(location).strip():
        location = None
    if mode == CleanSource.ARCHIVE and location is None:
        raise CleanSettingsError(ARCHIVE, f"required with {CLEAN_SOURCE} archive; allowed: s3://bucket/prefix/ "
                                          "(another bucket, or a prefix of the source bucket that no consumer reads)",
                                 name_of(ARCHIVE))
    if mode != CleanSource.ARCHIVE and location is not None:
        raise CleanSettingsError(ARCHIVE, f"only allowed with {CLEAN_SOURCE} archive (it is {mode}); leave it out, or "
                                          f"set {CLEAN_SOURCE} to archive", name_of(ARCHIVE))
    bucket, prefix = _archive(str(location).strip(), name_of) if location is not None else (None, "")
    return CleanSettings(mode, seconds, text, bucket, prefix)


def archive_overlap(settings: CleanSettings, source_bucket: str, read_prefixes: Iterable[str]) -> str | None:
    """Why an archive in the source bucket would be read again, or None. A copy there is a new object that S3
    announces: if a consumer reads the archive prefix, archived files would come back as new ones."""
    if settings.archive_bucket != source_bucket:
        return None
    for prefix in read_prefixes:
        if prefix.startswith(settings.archive_prefix) or settings.archive_prefix.startswith(prefix):
            read = f"prefix {prefix!r}" if prefix else "the whole bucket"
            return (f"the archive s3://{source_bucket}/{settings.archive_prefix} is in the source bucket where a "
                    f"consumer reads {read}: archived files would be announced and read again; allowed: an "
                    "archive prefix outside every consumer's prefix, or another bucket")
    return None


def _mode(value: Any, name_of) -> CleanSource:
    if value is None:
        return CleanSource.OFF
    text = str(value).strip().lower()
    if text in _MODE_ALIASES:
        return _MODE_ALIASES[text]
    allowed = [m.value for m in CleanSource]
    if text not in allowed:
        raise CleanSettingsError(CLEAN_SOURCE, f"{value!r} is not allowed{did_you_mean(text, allowed)}; allowed: "
                                               f"{', '.join(allowed)}", name_of(CLEAN_SOURCE))
    return CleanSource(text)


def _archive(uri: str, name_of) -> tuple[str, str]:
    m = re.fullmatch(r"s3://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(.*))?", uri)
    if not m or ".." in m.group(1):
        raise CleanSettingsError(ARCHIVE, f"{uri!r} is not allowed; allowed: s3://bucket/prefix/ with a valid "
                                          "bucket name", name_of(ARCHIVE))
    prefix = (m.group(2) or "").strip("/")
    if any(c in prefix for c in "*?[") or "//" in prefix:
        raise CleanSettingsError(ARCHIVE, f"{uri!r} has a wildcard or an empty path segment; allowed: a plain "
                                          "prefix such as s3://archive-bucket/landing/", name_of(ARCHIVE))
    return m.group(1), (prefix + "/" if prefix else "")
