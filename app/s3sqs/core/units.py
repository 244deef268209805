"""Durations, sizes and instants, written and read the same way by every option and flag."""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone

_DURATION_UNITS = {
    "us": 1e-6, "ms": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}
DURATION_EXAMPLES = "90s, 30m, 12h, 15d or '10 seconds'"


def parse_duration_seconds(text: str, bare_unit: str | None = "ms") -> float:
    """'90s', '30 minutes', '15d' -> seconds. A bare number is in `bare_unit` (milliseconds, as Spark reads
    its time options); with `bare_unit` None a unit is required. Raises ValueError."""
    m = re.fullmatch(r"\s*(?:interval\s+)?(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(text).lower())
    if not m:
        raise ValueError(text)
    unit = m.group(2) or bare_unit
    if unit not in _DURATION_UNITS:
        raise ValueError(text)
    return float(m.group(1)) * _DURATION_UNITS[unit]


def parse_size_bytes(text: str) -> int:
    """'512m', '1g', '1048576' -> bytes (binary units, as Spark's byte strings). Raises ValueError."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(text).lower())
    if not m or m.group(2) not in _SIZE_UNITS:
        raise ValueError(text)
    return int(m.group(1)) * _SIZE_UNITS[m.group(2)]


def human_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; bytes below 1 KiB as '512 B'."""
    if n < 1024:
        return f"{int(n):,} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
    raise AssertionError("unreachable")


def human_duration(seconds: float) -> str:
    """15 days, 2 s: in days from a day up, else in seconds."""
    return f"{seconds / 86400:g} days" if seconds >= 86400 else f"{seconds:g} s"


def now_ms() -> int:
    return int(time.time() * 1000)


def to_ms(t: datetime | None) -> int | None:
    return None if t is None else int(t.timestamp() * 1000)


def from_ms(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def iso(ms: int | None) -> str | None:
    """An instant as ISO-8601 UTC to the second, e.g. 2026-11-24T08:00:00Z."""
    return None if ms is None else from_ms(ms).strftime("%Y-%m-%dT%H:%M:%SZ")
