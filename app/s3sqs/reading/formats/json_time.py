"""Timestamps and dates from JSON strings, as Spark's JSON reader parses them (session time zone UTC).

Without a timestampFormat/dateFormat of the user's, Spark parses leniently (its string-to-timestamp cast:
`yyyy[-[m]m[-[d]d]][( |T)[h]h[:[m]m[:[s]s[.fraction]]]][zone]`, zone as Z, ±h[h][[:]mm], UTC+1, a region
id...). With one, the string must match the pattern exactly (case-insensitive); the common pattern letters
are translated to a regular expression here.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo

from ...config.format_options import ISO_DATE, ISO_TIMESTAMP

UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DATE = date(1970, 1, 1)
# Java's ZoneId.SHORT_IDS, which Spark passes to ZoneId.of.
_SHORT_IDS = {
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2})(?::?(\d{2}))?)?$")
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+$")


@lru_cache(maxsize=256)
def zone(text: str):
    """Java's ZoneId.of(text, SHORT_IDS) after Spark's clean-up of one-digit hours; None if not a zone."""
    t = re.sub(r"([+-])(\d):", r"\g<1>0\2:", text.strip(), count=1)
    t = re.sub(r"([+-])(\d\d):(\d)$", r"\1\2:0\3", t, count=1)
    t = _SHORT_IDS.get(t, t)
    if t == "Z":
        return UTC
    if t[:1] in "+-":
        return _offset(t)
    for prefix in ("UTC", "GMT", "UT"):
        if t == prefix:
            return UTC
        if t.startswith(prefix) and t[len(prefix):len(prefix) + 1] in ("+", "-"):
            return _offset(t[len(prefix):])
    if not _REGION.match(t):
        return None
    try:
        return ZoneInfo(t)
    except (ValueError, OSError, KeyError):
        return None


def _offset(t: str):
    m = _OFFSET.match(t)
    if not m or (len(m.group(2)) == 1 and m.group(3)):  # +h:mm is not a Java offset
        return None
    secs = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
    if secs > 18 * 3600 or int(m.group(3) or 0) > 59 or int(m.group(4) or 0) > 59:
        return None
    return timezone(timedelta(seconds=-secs if m.group(1) == "-" else secs))


def micros(dt: datetime) -> int:
    d = dt - _EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _digits_ok(seg: int, n: int) -> bool:
    return seg == 6 or (seg == 0 and 4 <= n <= 6) or (seg == 7 and n <= 2) or (seg not in (0, 6, 7) and 0 < n <= 2)


def _segments(s: str):
    """Spark's parseTimestampString: ([y, M, d, h, m, s, us], zone text or None, time only) or None."""
    s = s.strip(" \t\n\r\f\v\x00")
    if not s:
        return None
    seg = [1, 1, 1, 0, 0, 0, 0, 0, 0]
    i = value = digits = frac_digits = 0
    sign, just_time, tz = 1, False, None
    j, end = 0, len(s)
    if s[0] in "+-":
        sign, j = (-1 if s[0] == "-" else 1), 1
    signed = j == 1
    while j < end:
        c = s[j]
        if "0" <= c <= "9":
            if i == 6:
                frac_digits += 1
            if i != 6 or digits < 6:
                value = value * 10 + ord(c) - 48
            digits += 1
        elif j == 0 and c == "T":
            just_time, i = True, i + 3
        elif i < 2:
            if c == "-":
                if not _digits_ok(i, digits):
                    return None
                seg[i], value, digits, i = value, 0, 0, i + 1
            elif i == 0 and c == ":" and not signed:
                if not _digits_ok(3, digits):
                    return None
                just_time, seg[3], value, digits, i = True, value, 0, 0, 4
            else:
                return None
        elif i == 2:
            if c not in " T" or not _digits_ok(i, digits):
                return None
            seg[i], value, digits, i = value, 0, 0, i + 1
        elif i in (3, 4):
            if c != ":" or not _digits_ok(i, digits):
                return None
            seg[i], value, digits, i = value, 0, 0, i + 1
        elif i in (5, 6):
            if not _digits_ok(i, digits):
                return None
            seg[i], value, digits = value, 0, 0
            if c == "." and i == 5:
                i += 1
            else:
                i += 1 if i == 6 else 2
                tz, j = s[j:], end
                if i == 7:  # zone right after the seconds: skip the (empty) fraction
                    pass
        else:
            return None
        j += 1
    if i > 8 or not _digits_ok(min(i, 7), digits) and tz is None:
        return None
    if tz is None:
        seg[i] = value
    while frac_digits < 6:
        seg[6] *= 10
        frac_digits += 1
    seg[0] *= sign
    return seg, tz, just_time


def default_timestamp(s: str, ntz: bool = False):
    """Microseconds since the epoch (UTC), or None if Spark's lenient parsing refuses `s`."""
    parsed = _segments(s.replace("GMT", "") if "GMT" in s and not ntz else s)
    if parsed is None:
        return None
    seg, tz_text, just_time = parsed
    if ntz and (tz_text is not None or just_time):
        return None
    tz = zone(tz_text) if tz_text is not None else UTC
    if tz is None:
        return None
    try:
        day = datetime.now(tz).date() if just_time else date(seg[0], seg[1], seg[2])
        local = datetime(day.year, day.month, day.day, seg[3], seg[4], seg[5], seg[6], tzinfo=tz)
    except (ValueError, OverflowError):
        return None
    return micros(local)


def default_date(s: str):
    """Days since the epoch, as Spark's lenient date parsing gives them, or None."""
    s = s.replace("GMT", "").strip(" \t\n\r\f\v\x00")
    m = re.match(r"([+-]?)(\d+)(?:-(\d+)(?:-(\d+))?)?", s)
    if not m or not 4 <= len(m.group(2)) <= 6:
        return None
    rest = s[m.end():]
    if any(g is not None and not 1 <= len(g) <= 2 for g in (m.group(3), m.group(4))):
        return None
    if rest and (m.group(4) is None or rest[0] not in " T"):
        return None
    try:
        d = date(int(m.group(1) + m.group(2)), int(m.group(3) or 1), int(m.group(4) or 1))
    except ValueError:
        return None
    return (d - _EPOCH_DATE).days


# ------------------------------------------------------------------------------------- patterns

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|wed|thu|fri|sat|sun"


def _letter(c: str, n: int) -> str:
    two = r"\d{2}" if n == 2 else r"\d{1,2}"
    if c in "yu":
        return r"(?P<y2>\d{2})" if n == 2 else rf"(?P<y>[+-]?\d{{{max(n, 1)},9}})"
    if c in "ML":
        if n >= 3:
            return r"(?P<mon>" + "|".join(m if n > 3 else m[:3] for m in _MONTHS) + ")"
        return rf"(?P<M>{two})"
    groups = {"d": "d", "H": "H", "k": "H", "h": "h", "K": "h", "m": "m", "s": "s"}
    if c in groups:
        return rf"(?P<{groups[c]}>{two})"
    if c == "S":
        return rf"(?P<S>\d{{1,{n}}})"
    if c == "a":
        return r"(?P<a>am|pm)"
    if c == "E":
        return rf"(?:{_DAYS})"
    if c == "X":
        return (r"(?P<z>z|[+-]\d{2}(?:\d{2})?)", r"(?P<z>z|[+-]\d{4})", r"(?P<z>z|[+-]\d{2}:\d{2})")[min(n, 3) - 1]
    if c == "x":
        return (r"(?P<z>[+-]\d{2}(?:\d{2})?)", r"(?P<z>[+-]\d{4})", r"(?P<z>[+-]\d{2}:\d{2})")[min(n, 3) - 1]
    if c == "Z":
        return r"(?P<z>[+-]\d{4})" if n <= 3 else r"(?P<z>z|[+-]\d{2}:\d{2}|gmt[+-]\d{2}:\d{2})"
    if c in "zVO":
        return r"(?P<z>[a-z][a-z0-9~/._+-]*(?:[+-]\d{1,2}(?::\d{2})?)?)"
    raise ValueError(f"pattern letter {c!r} is not supported")


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> re.Pattern:
    """A Spark datetime pattern as a case-insensitive regular expression with named groups."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j == i + 1:
                out.append("'")
                i += 2
                continue
            j = n if j < 0 else j
            out.append(re.escape(pattern[i + 1:j]))
            i = j + 1
        elif c == "[":
            out.append("(?:")
            i += 1
        elif c == "]":
            out.append(")?")
            i += 1
        elif c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            out.append(_letter(c, j - i))
            i = j
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.IGNORECASE)


def _fields(s: str, pattern: str):
    m = compile_pattern(pattern).match(s)
    if not m:
        return None
    g = m.groupdict()
    year = int(g["y"]) if g.get("y") else 2000 + int(g["y2"]) if g.get("y2") else 1970
    month = _MONTHS.index(next(x for x in _MONTHS if x.startswith(g["mon"].lower()))) + 1 if g.get("mon") \
        else int(g.get("M") or 1)
    hour = int(g.get("H") or 0)
    if g.get("h"):
        hour = int(g["h"]) % 12 + (12 if (g.get("a") or "").lower() == "pm" else 0)
    frac = (g.get("S") or "").ljust(6, "0")[:6]
    return year, month, int(g.get("d") or 1), hour, int(g.get("m") or 0), int(g.get("s") or 0), int(frac), g.get("z")


def pattern_timestamp(s: str, pattern: str, ntz: bool = False):
    f = _fields(s, pattern)
    if f is None:
        return None
    tz = UTC
    if f[7] is not None:
        if ntz:
            return None
        tz = UTC if f[7].lower() == "z" else zone(f[7].upper() if len(f[7]) <= 4 else f[7])
        if tz is None:
            return None
    try:
        return micros(datetime(*f[:7], tzinfo=tz))
    except (ValueError, OverflowError):
        return None


def pattern_date(s: str, pattern: str):
    f = _fields(s, pattern)
    if f is None:
        return None
    try:
        return (date(*f[:3]) - _EPOCH_DATE).days
    except ValueError:
        return None


def timestamp_parser(fmt: str, ntz: bool = False):
    """str -> microseconds or None, for the reader's timestampFormat (ours by default: Spark's lenient)."""
    if fmt == ISO_TIMESTAMP:
        return lambda s: default_timestamp(s, ntz)
    compile_pattern(fmt)
    return lambda s: pattern_timestamp(s, fmt, ntz)


def date_parser(fmt: str):
    if fmt == ISO_DATE:
        return default_date
    compile_pattern(fmt)
    return lambda s: pattern_date(s, fmt)
