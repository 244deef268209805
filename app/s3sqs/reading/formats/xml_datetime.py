"""Dates and timestamps in text, parsed as Spark's XML reader parses them (session time zone UTC).

timestampFormat left at its default: Spark's lenient reading (DateTimeUtils.stringToTimestamp): `2024`,
`2024-01`, `2024-1-2 3:4:5`, a `T` or a space before the time, up to 6 fractional digits (more are cut),
then an optional zone (`Z`, `+01:00`, `+0100`, `UTC`, `GMT+1`, `Europe/Paris`, with or without a space).
Any other pattern, and every dateFormat, is read strictly by its letters (Java DateTimeFormatter style:
`dd` is two digits, `d` one or two, `SSS` one to three fractional digits, `[...]` optional, `'...'`
literal), and an impossible date (February 30) does not parse.
"""
from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...config.format_options import ISO_TIMESTAMP


class BadDatetime(ValueError):
    pass


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_ABBREVIATIONS = {"UTC": "UTC", "UT": "UTC", "GMT": "UTC", "Z": "UTC", "PST": "America/Los_Angeles",
                  "PDT": "America/Los_Angeles", "MST": "America/Denver", "MDT": "America/Denver",
                  "CST": "America/Chicago", "CDT": "America/Chicago", "EST": "America/New_York",
                  "EDT": "America/New_York", "CET": "CET", "CEST": "CET", "BST": "Europe/London",
                  "JST": "Asia/Tokyo", "IST": "Asia/Kolkata"}
_MONTHS = [m.lower() for m in calendar.month_name[1:]]
_MONTHS_SHORT = [m.lower() for m in calendar.month_abbr[1:]]
_DAYS = [d.lower() for d in calendar.day_name] + [d.lower() for d in calendar.day_abbr]


@lru_cache(maxsize=256)
def zone(name: str):
    """A zone by offset (+01, +0100, +01:00, +01:00:15), prefix (UTC+1, GMT-05:00), region or abbreviation."""
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", name)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        h, mi, se = int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        if h > 18 or mi > 59 or se > 59:
            raise BadDatetime(f"not a zone offset: {name!r}")
        return timezone(sign * timedelta(hours=h, minutes=mi, seconds=se))
    try:
        return ZoneInfo(_ABBREVIATIONS.get(name, name))
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise BadDatetime(f"unknown time zone {name!r}") from e


def micros(d: datetime) -> int:
    delta = d - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _instant(y, mo, d, h=0, mi=0, s=0, us=0, tz=None) -> int:
    try:
        local = datetime(y, mo, d, h, mi, s, us)
    except ValueError as e:
        raise BadDatetime(str(e)) from None
    return micros(local.replace(tzinfo=tz or timezone.utc))


_LENIENT = re.compile(
    r"([+-]?)(\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?"
    r"(?:[T ](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?)?"
    r"\s*(Z|[+-]\d{1,2}(?::?\d{2}){0,2}|(?:UTC|GMT|UT)(?:[+-]\d{1,2}(?::?\d{2})?)?|[A-Za-z][A-Za-z0-9_/+-]*)?")


def lenient_timestamp(s: str) -> int:
    """Spark's default: stringToTimestamp, as microseconds since the epoch."""
    t = s.strip()
    if t.endswith(("T", " ")) and re.fullmatch(r"[+-]?\d{4,6}-\d{1,2}-\d{1,2}[T ]", t):
        t = t[:-1]
    m = _LENIENT.fullmatch(t)
    if not m:
        raise BadDatetime(f"not a timestamp: {s!r}")
    sign, y, mo, d, h, mi, se, frac, tz = m.groups()
    year = -int(y) if sign == "-" else int(y)
    us = int((frac or "")[:6].ljust(6, "0"))
    return _instant(year, int(mo or 1), int(d or 1), int(h or 0), int(mi or 0), int(se or 0), us,
                    zone(tz) if tz else None)


# ---- strict patterns ------------------------------------------------------------------------------

_FIELDS = {  # letter -> (group name, regex by count)
    "y": "year", "u": "year", "M": "month", "L": "month", "d": "day", "H": "hour", "k": "hour24", "h": "hour12",
    "K": "hour11", "m": "minute", "s": "second", "S": "fraction", "a": "ampm", "X": "zoneX", "x": "zonex",
    "Z": "zoneZ", "z": "zonename", "V": "zoneid", "E": "weekday", "D": "dayofyear",
}


def _field_regex(letter: str, count: int) -> str:
    if letter in "yu":
        return r"\d{2}" if count == 2 else r"\d{4}"
    if letter in "ML":
        if count >= 4:
            return "[A-Za-z]+"
        if count == 3:
            return "[A-Za-z]{3}"
        return r"\d{2}" if count == 2 else r"\d{1,2}"
    if letter in "dHkhKms":
        return r"\d{2}" if count == 2 else r"\d{1,2}"
    if letter == "D":
        return r"\d{%d,3}" % count
    if letter == "S":
        return r"\d{1,%d}" % count
    if letter == "a":
        return "(?:AM|PM|am|pm)"
    if letter in "Xx":
        z = "Z|" if letter == "X" else ""
        return {1: rf"(?:{z}[+-]\d{{2}}(?:\d{{2}})?)", 2: rf"(?:{z}[+-]\d{{4}})"}.get(
            count, rf"(?:{z}[+-]\d{{2}}:\d{{2}})")
    if letter == "Z":
        return r"(?:[+-]\d{2}:\d{2}|Z)" if count == 5 else r"[+-]\d{4}"
    if letter in "zV":
        return r"[A-Za-z][A-Za-z0-9_/+-]*"
    if letter == "E":
        return "[A-Za-z]+"
    raise ValueError(f"pattern letter {letter!r} is not supported")


@lru_cache(maxsize=64)
def _compile(pattern: str) -> tuple[re.Pattern, tuple]:
    out, groups, i, n, depth = [], [], 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise ValueError(f"unclosed quote in datetime pattern {pattern!r}")
            out.append(re.escape("'" if j == i + 1 else pattern[i + 1:j]))
            i = j + 1
        elif c == "[":
            out.append("(?:")
            depth += 1
            i += 1
        elif c == "]":
            out.append(")?")
            depth -= 1
            i += 1
        elif c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            if c not in _FIELDS:
                raise ValueError(f"pattern letter {c!r} in {pattern!r} is not supported")
            name = f"g{len(groups)}"
            groups.append((name, c, j - i))
            out.append(f"(?P<{name}>{_field_regex(c, j - i)})")
            i = j
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + ")?" * depth), tuple(groups)


def _resolve(m: re.Match, groups: tuple) -> dict:
    v: dict = {}
    for name, letter, count in groups:
        text = m.group(name)
        if text is None:
            continue
        field = _FIELDS[letter]
        if field == "year":
            v["year"] = 2000 + int(text) if count == 2 else int(text)
        elif field == "month":
            low = text.lower()
            if count >= 4:
                v["month"] = _MONTHS.index(low) + 1 if low in _MONTHS else _bad(text)
            elif count == 3:
                v["month"] = _MONTHS_SHORT.index(low) + 1 if low in _MONTHS_SHORT else _bad(text)
            else:
                v["month"] = int(text)
        elif field == "fraction":
            v["us"] = int(text[:6].ljust(6, "0"))
        elif field == "ampm":
            v["pm"] = text.lower() == "pm"
        elif field.startswith("zone"):
            v["tz"] = timezone.utc if text == "Z" else zone(text)
        elif field == "weekday":
            if text.lower() not in _DAYS:
                _bad(text)
        else:
            v[field] = int(text)
    return v


def _bad(text):
    raise BadDatetime(f"not a valid name: {text!r}")


def _fields(s: str, pattern: str) -> dict:
    rx, groups = _compile(pattern)
    m = rx.fullmatch(s)
    if not m:
        raise BadDatetime(f"{s!r} does not match the pattern {pattern!r}")
    return _resolve(m, groups)


def _hour(v: dict) -> int:
    if "hour" in v:
        return v["hour"]
    if "hour24" in v:
        return v["hour24"] % 24
    if "hour12" in v:
        h = v["hour12"]
        if not 1 <= h <= 12:
            raise BadDatetime("hour of am/pm out of range")
        return h % 12 + (12 if v.get("pm") else 0)
    if "hour11" in v:
        return v["hour11"] + (12 if v.get("pm") else 0)
    return 0


def _ymd(v: dict) -> tuple[int, int, int]:
    year = v.get("year", 1970)
    if "dayofyear" in v:
        d = date(year, 1, 1) + timedelta(days=v["dayofyear"] - 1)
        return d.year, d.month, d.day
    return year, v.get("month", 1), v.get("day", 1)


def timestamp_parser(pattern: str | None) -> Callable[[str], int]:
    """Text -> microseconds since the epoch."""
    if not pattern or pattern == ISO_TIMESTAMP:
        return lenient_timestamp
    _compile(pattern)  # an unsupported pattern fails here, once

    def parse(s: str) -> int:
        v = _fields(s, pattern)
        return _instant(*_ymd(v), _hour(v), v.get("minute", 0), v.get("second", 0), v.get("us", 0), v.get("tz"))
    return parse


def date_parser(pattern: str | None) -> Callable[[str], int]:
    """Text -> days since the epoch."""
    pattern = pattern or "yyyy-MM-dd"
    _compile(pattern)

    def parse(s: str) -> int:
        try:
            return date(*_ymd(_fields(s, pattern))).toordinal() - _EPOCH_DAY
        except ValueError as e:
            raise BadDatetime(str(e)) from None
    return parse
