"""Timestamps and dates from text as Spark's file readers parse them (session time zone UTC), for every
text format (CSV, JSON, XML).

Two ways, as in Spark:
- lenient (timestampFormat/dateFormat left at their defaults): Spark's string-to-timestamp/date cast,
  `[+-]yyyy[-[m]m[-[d]d]][( |T)[h]h[:[m]m[:[s]s[.fraction]]]][zone]`, a time alone taking today's date,
  zones as Z, ±h[h][[:]mm[[:]ss]], UTC/GMT/UT with an offset, region ids and Java's short ids; "GMT" is
  taken out first (Spark's cleanLegacyTimestampStr).
- strict: a Spark datetime pattern (java.time letters, case-insensitive, `[...]` optional, `'...'`
  literal), translated to a regular expression; only text that fits parses, and an impossible date
  (February 30) does not.
Parsers return microseconds (timestamps) or days (dates) since the epoch, and raise BadDatetime.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable
from zoneinfo import ZoneInfo

from ....config.format_options import ISO_DATE, ISO_TIMESTAMP

UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_TRIM = "".join(map(chr, range(33)))  # Spark's trimAll: white space and control characters
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
# Zone names a `z` pattern letter reads (java.time's zone texts) beyond what ZoneId.of takes.
_ZONE_NAMES = {"PDT": "America/Los_Angeles", "MDT": "America/Denver", "CDT": "America/Chicago",
               "EDT": "America/New_York", "EST": "America/New_York", "MST": "America/Denver", "CEST": "CET",
               "BST": "Europe/London"}
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2})(?::?(\d{2}))?)?$")
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+$")


class BadDatetime(ValueError):
    """The text is not a timestamp/date by the rules asked for."""


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


def _micros(dt: datetime) -> int:
    d = dt - _EPOCH
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _instant(y, mo, d, h, mi, s, us, tz, text) -> int:
    try:
        return _micros(datetime(y, mo, d, h, mi, s, us, tzinfo=tz))
    except (ValueError, OverflowError):
        raise BadDatetime(f"not a valid timestamp: {text!r}") from None


# ------------------------------------------------------------------------------------- lenient

def _digits_ok(seg: int, n: int) -> bool:
    return seg == 6 or (seg == 0 and 4 <= n <= 6) or (seg == 7 and n <= 2) or (seg not in (0, 6, 7) and 0 < n <= 2)


def _segments(s: str):
    """Spark's parseTimestampString: ([y, M, d, h, m, s, us], zone text or None, time only) or None."""
    s = s.strip(_TRIM)
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
            else:  # the rest is the zone
                i += 1 if i == 6 else 2
                tz, j = s[j:], end
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


def lenient_timestamp(s: str, ntz: bool = False) -> int:
    """Spark's default reading of a timestamp; ntz: TIMESTAMP_NTZ, which refuses a zone and a time alone."""
    parsed = _segments(s.replace("GMT", "") if "GMT" in s and not ntz else s)
    if parsed is None:
        raise BadDatetime(f"not a timestamp: {s!r}")
    seg, tz_text, just_time = parsed
    if ntz and (tz_text is not None or just_time):
        raise BadDatetime(f"a zone or a time alone in a TIMESTAMP_NTZ value: {s!r}")
    tz = zone(tz_text) if tz_text is not None else UTC
    if tz is None:
        raise BadDatetime(f"not a time zone in {s!r}")
    if just_time:
        today = datetime.now(tz).date()
        seg[0], seg[1], seg[2] = today.year, today.month, today.day
    return _instant(*seg[:7], tz, s)


_LENIENT_DATE = re.compile(r"([+-]?)(\d+)(?:-(\d+)(?:-(\d+))?)?")


def lenient_date(s: str) -> int:
    """Spark's default reading of a date (stringToDate after taking "GMT" out): days since the epoch."""
    t = s.replace("GMT", "").strip(_TRIM)
    m = _LENIENT_DATE.match(t)
    if not m or not 4 <= len(m.group(2)) <= 7 \
            or any(g is not None and not 1 <= len(g) <= 2 for g in (m.group(3), m.group(4))):
        raise BadDatetime(f"not a date: {s!r}")
    rest = t[m.end():]
    if rest and (m.group(4) is None or rest[0] not in " T"):
        raise BadDatetime(f"not a date: {s!r}")
    try:
        return date(int(m.group(1) + m.group(2)), int(m.group(3) or 1), int(m.group(4) or 1)).toordinal() - _EPOCH_DAY
    except ValueError:
        raise BadDatetime(f"not a valid date: {s!r}") from None


# ------------------------------------------------------------------------------------- patterns

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_MONTH_OF = {**{m: i + 1 for i, m in enumerate(_MONTHS)}, **{m[:3]: i + 1 for i, m in enumerate(_MONTHS)}}
_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_GROUP = {"y": "y", "u": "y", "M": "M", "L": "M", "d": "d", "H": "H", "k": "k", "h": "h", "K": "K", "m": "mi",
          "s": "s", "D": "D"}


def _letters(c: str, n: int) -> str:
    """The regular expression for a run of n pattern letters c, with a named group for the field."""
    if c in "yu":
        if n == 2:
            return r"(?P<y2>\d{2})"
        # java.time, strictly: below 4 letters a sign only for a negative year; from 4, a sign exactly when
        # the year has more digits than letters (so yyyy refuses 02024 and takes +02024)
        return rf"(?P<y>-?\d{{{n},9}})" if n < 4 else rf"(?P<y>\d{{{n}}}|[+-]\d{{{n + 1},9}})"
    if c in "ML" and n >= 3:
        return r"(?P<Mname>" + "|".join(m if n > 3 else m[:3] for m in _MONTHS) + ")"
    if c == "D":
        return rf"(?P<D>\d{{{n},3}})"
    if c in _GROUP:
        if n > 2:
            raise ValueError(f"too many pattern letters '{c * n}'")
        return rf"(?P<{_GROUP[c]}>\d{{2}})" if n == 2 else rf"(?P<{_GROUP[c]}>\d{{1,2}})"
    if c == "S":
        return rf"(?P<f>\d{{1,{n}}})"
    if c == "a":
        return r"(?P<ampm>am|pm)"
    if c == "E":
        return "(?:" + "|".join(d[:3] for d in _DAYS) + ")" if n <= 3 else "(?:" + "|".join(_DAYS) + ")"
    if c in "Xx":
        z = "z|" if c == "X" else ""
        return "(?P<zone>" + z + {1: r"[+-]\d{2}(?:\d{2})?", 2: r"[+-]\d{4}", 3: r"[+-]\d{2}:\d{2}",
                                  4: r"[+-]\d{4}(?:\d{2})?"}.get(n, r"[+-]\d{2}:\d{2}(?::\d{2})?") + ")"
    if c == "Z":
        return r"(?P<zone>[+-]\d{4})" if n <= 3 else r"(?P<zone>z|[+-]\d{2}:\d{2}|gmt[+-]\d{2}:\d{2})"
    if c in "zVO":
        return r"(?P<zname>[a-z][a-z0-9~/._+-]*(?:[+-]\d{1,2}(?::\d{2})?)?)"
    raise ValueError(f"the pattern letter '{c}' is not supported")


@lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern:
    """A Spark datetime pattern as a case-insensitive regular expression (ValueError if it cannot be)."""
    out, i, depth, seen, n = [], 0, 0, set(), len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise ValueError("an unclosed quote")
            out.append(re.escape("'" if j == i + 1 else pattern[i + 1:j]))
            i = j + 1
        elif c == "[":
            out.append("(?:")
            depth, i = depth + 1, i + 1
        elif c == "]":
            out.append(")?")
            depth, i = depth - 1, i + 1
        elif c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            rx = _letters(c, j - i)
            for name in re.findall(r"\?P<(\w+)>", rx):  # a field twice (in two optional parts): keep the first
                if name in seen:
                    rx = rx.replace(f"?P<{name}>", "?:")
                seen.add(name)
            out.append(rx)
            i = j
        else:
            out.append(re.escape(c))
            i += 1
    if depth:
        raise ValueError("an unclosed '['")
    return re.compile("".join(out), re.IGNORECASE)


def _hour(g: dict) -> int:
    """Spark's toLocalTime: H, else k (24 is midnight), else h/K with am/pm (am if none), else 12 for pm."""
    pm = (g.get("ampm") or "am").lower() == "pm"
    if g.get("H"):
        return int(g["H"])
    if g.get("k"):
        return int(g["k"]) % 24
    if g.get("h"):
        h = int(g["h"])
        if not 1 <= h <= 12:
            raise BadDatetime(f"clock hour of am/pm {h} out of 1-12")
        return h % 12 + (12 if pm else 0)
    if g.get("K"):
        return int(g["K"]) + (12 if pm else 0)
    return 12 if pm else 0


def _fields(rx: re.Pattern, s: str, pattern: str):
    """(year, month, day, hour, minute, second, micros, tz) of `s` by the pattern."""
    m = rx.fullmatch(s)
    if m is None:
        raise BadDatetime(f"{s!r} does not fit the pattern {pattern!r}")
    g = m.groupdict()
    year = int(g["y"]) if g.get("y") else 2000 + int(g["y2"]) if g.get("y2") else 1970
    if g.get("D"):
        try:
            d = date(year, 1, 1) + timedelta(days=int(g["D"]) - 1)
        except (ValueError, OverflowError):
            raise BadDatetime(f"not a valid date: {s!r}") from None
        month, day = d.month, d.day
    else:
        month = int(g["M"]) if g.get("M") else _MONTH_OF[g["Mname"].lower()] if g.get("Mname") else 1
        day = int(g.get("d") or 1)
    frac = g.get("f")
    us = int(frac[:6].ljust(6, "0")) if frac else 0
    tz = UTC
    if g.get("zone"):
        tz = UTC if g["zone"].lower() == "z" else zone(g["zone"].upper())
    elif g.get("zname"):
        name = g["zname"]
        tz = zone(_ZONE_NAMES.get(name.upper(), name.upper() if len(name) <= 4 else name))
    if tz is None:
        raise BadDatetime(f"not a time zone in {s!r}")
    return year, month, day, _hour(g), int(g.get("mi") or 0), int(g.get("s") or 0), us, tz


def _pattern(pattern: str, option: str) -> re.Pattern:
    try:
        return _compile(pattern)
    except ValueError as e:
        raise ValueError(f"option '{option}' {pattern!r}: {e}") from None


# ------------------------------------------------------------------------------------- the API

def timestamp_parser(pattern: str | None, *, ntz: bool = False) -> Callable[[str], int]:
    """text -> microseconds since the epoch, for the reader's timestampFormat (None or Spark's default:
    lenient). ntz: a TIMESTAMP_NTZ column, which Spark reads by its own option (timestampNTZFormat, left at
    its default here), so always leniently and refusing a zone. ValueError naming the option if the
    pattern cannot be read."""
    if ntz:
        return lambda s: lenient_timestamp(s, True)
    if not pattern or pattern == ISO_TIMESTAMP:
        return lenient_timestamp
    rx = _pattern(pattern, "timestampFormat")

    def parse(s: str) -> int:
        return _instant(*_fields(rx, s, pattern), s)
    return parse


def date_parser(pattern: str | None, *, fallback: bool = True) -> Callable[[str], int]:
    """text -> days since the epoch, for the reader's dateFormat. With Spark's default (None or
    yyyy-MM-dd) and fallback, lenient as Spark's CSV and JSON readers are; without fallback (Spark's XML
    reader, CSV inference) strictly by the pattern."""
    pattern = pattern or ISO_DATE
    if fallback and pattern == ISO_DATE:
        return lenient_date
    rx = _pattern(pattern, "dateFormat")

    def parse(s: str) -> int:
        y, mo, d = _fields(rx, s, pattern)[:3]
        try:
            return date(y, mo, d).toordinal() - _EPOCH_DAY
        except ValueError:
            raise BadDatetime(f"not a valid date: {s!r}") from None
    return parse


def or_none(parse: Callable[[str], int]) -> Callable[[str], int | None]:
    """A parser that answers None instead of raising, for readers that mark a misfit by a sentinel."""
    def parse_or_none(s: str):
        try:
            return parse(s)
        except BadDatetime:
            return None
    return parse_or_none
