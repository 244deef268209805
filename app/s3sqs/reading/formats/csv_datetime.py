"""Dates and timestamps from text as Spark's CSV reader parses them (the session time zone taken as UTC).

Without dateFormat/timestampFormat, Spark parses as CAST does (lenient: "2020-1-5", "2020-01-15 10:20",
zone offsets and ids); with a pattern, only text that fits the pattern parses, with no fallback. The
patterns are Spark's datetime patterns (java.time letters); the common letters are translated here and a
pattern with others is refused with the option named.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable
from zoneinfo import ZoneInfo

from ...config.format_options import ISO_DATE, ISO_TIMESTAMP

UTC = timezone.utc
_TRIM = "".join(map(chr, range(33)))
_ZONE = r"(?P<zone>Z|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?|(?:UTC|GMT|UT)(?:[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?|[A-Za-z][A-Za-z0-9_/+-]*)"
_TS = re.compile(
    r"(?P<y>[+-]?\d{4,7})(?:-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2}))?)?"
    r"(?:[ T](?P<H>\d{1,2})(?::(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<f>\d*))?)?)?)?"
    r"(?:\s*" + _ZONE + r")?")
_TIME_ONLY = re.compile(r"T?(?P<H>\d{1,2}):(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<f>\d*))?)?(?:\s*" + _ZONE + r")?")
_DATE = re.compile(r"(?P<y>[+-]?\d{4,7})(?:-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2})(?:[ T].*)?)?)?", re.S)
_SHORT_IDS = {"EST": "-05:00", "MST": "-07:00", "HST": "-10:00", "ACT": "Australia/Darwin",
              "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo",
              "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare",
              "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa",
              "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo",
              "MIT": "Pacific/Apia", "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi",
              "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles",
              "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh"}


def _offset(text: str) -> timedelta:
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    if ":" in text[1:]:
        parts = text[1:].split(":")
    elif len(digits) <= 2:
        parts = [digits]
    else:
        parts = [digits[:-2], digits[-2:]] if len(digits) <= 4 else [digits[:-4], digits[-4:-2], digits[-2:]]
    h, m, s = (int(p) for p in parts + ["0"] * (3 - len(parts)))
    if h > 18 or m > 59 or s > 59:
        raise ValueError(f"bad zone offset {text!r}")
    return sign * timedelta(hours=h, minutes=m, seconds=s)


def _zone(text: str | None):
    """A tzinfo for a zone as Spark reads one (offsets, Z, UTC/GMT/UT with an offset, region ids)."""
    if text is None:
        return UTC
    if text == "Z":
        return UTC
    if text[0] in "+-":
        return timezone(_offset(text))
    for prefix in ("UTC", "GMT", "UT"):
        if text.startswith(prefix) and (len(text) == len(prefix) or text[len(prefix)] in "+-"):
            rest = text[len(prefix):]
            return timezone(_offset(rest)) if rest else UTC
    text = _SHORT_IDS.get(text, text)
    if text[0] in "+-":
        return timezone(_offset(text))
    return ZoneInfo(text)


def _micros(frac: str | None) -> int:
    return int((frac or "")[:6].ljust(6, "0")) if frac else 0


def _instant(y, mo, d, h, mi, s, us, tz) -> datetime:
    local = datetime(y, mo, d, h, mi, s, us)
    return local.replace(tzinfo=tz).astimezone(UTC).replace(tzinfo=None) if tz is not UTC else local


def cast_timestamp(text: str, with_zone: bool = True) -> datetime:
    """CAST(text AS TIMESTAMP) in a UTC session: naive UTC datetime. with_zone=False: TIMESTAMP_NTZ, which
    refuses a zone."""
    s = text.strip(_TRIM)
    m = _TS.fullmatch(s)
    if m is None:
        t = _TIME_ONLY.fullmatch(s)
        if t is None:
            raise ValueError(f"not a timestamp: {text!r}")
        today = datetime.now(UTC).date()
        m, (y, mo, d) = t, (today.year, today.month, today.day)
    else:
        y, mo, d = int(m["y"]), int(m["m"] or 1), int(m["d"] or 1)
    if m["zone"] is not None and not with_zone:
        raise ValueError(f"a zone in a TIMESTAMP_NTZ value: {text!r}")
    g = m.groupdict()
    return _instant(y, mo, d, int(g.get("H") or 0), int(g.get("M") or 0), int(g.get("S") or 0),
                    _micros(g.get("f")), _zone(m["zone"]))


def cast_date(text: str) -> date:
    m = _DATE.fullmatch(text.strip(_TRIM))
    if m is None:
        raise ValueError(f"not a date: {text!r}")
    return date(int(m["y"]), int(m["m"] or 1), int(m["d"] or 1))


# ----------------------------------------------------------------------------------- patterns

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _letters(letter: str, n: int) -> str:
    """The regex for a run of one pattern letter, with a named group for the field."""
    num = {"y": "y", "u": "y", "M": "M", "L": "M", "d": "d", "H": "H", "k": "H", "h": "h", "K": "h", "m": "mi",
           "s": "s"}
    if letter in ("y", "u"):
        return r"(?P<y2>\d{2})" if n == 2 else rf"(?P<y>[+-]?\d{{{n},9}})"
    if letter in ("M", "L") and n >= 3:
        names = "|".join(m[:3] for m in _MONTHS) if n == 3 else "|".join(_MONTHS)
        return rf"(?P<Mname>{names})"
    if letter in num:
        if n > 2:
            raise ValueError(f"too many pattern letters '{letter * n}'")
        return rf"(?P<{num[letter]}>\d{{{1 if n == 1 else 2},2}})" if n == 1 else rf"(?P<{num[letter]}>\d{{2}})"
    if letter == "S":
        return rf"(?P<f>\d{{1,{n}}})"
    if letter == "a":
        return r"(?P<ampm>am|pm)"
    if letter == "E":
        names = "|".join(d[:3] for d in _DAYS) if n <= 3 else "|".join(_DAYS)
        return rf"(?:{names})"
    if letter == "X":
        return r"(?P<zone>Z|" + _offset_re(n) + ")"
    if letter == "x":
        return r"(?P<zone>" + _offset_re(n) + ")"
    if letter == "Z":
        return r"(?P<zone>[+-]\d{4})" if n <= 3 else r"(?P<zone>Z|[+-]\d{2}:\d{2})"
    if letter == "V" and n == 2:
        return r"(?P<zone>[A-Za-z][A-Za-z0-9_/+-]*)"
    raise ValueError(f"the pattern letter '{letter}' is not supported here")


def _offset_re(n: int) -> str:
    return {1: r"[+-]\d{2}(?:\d{2})?", 2: r"[+-]\d{4}", 3: r"[+-]\d{2}:\d{2}", 4: r"[+-]\d{4}(?:\d{2})?"}.get(
        n, r"[+-]\d{2}:\d{2}(?::\d{2})?")


@lru_cache(maxsize=32)
def _compile(pattern: str) -> re.Pattern:
    out, i, depth, seen = [], 0, 0, set()
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise ValueError("an unclosed quote")
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
            while j < len(pattern) and pattern[j] == c:
                j += 1
            rx = _letters(c, j - i)
            for name in re.findall(r"\?P<(\w+)>", rx):  # a field twice (in two optional parts): rename
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
    return re.compile("".join(out), re.I)


def pattern_parser(pattern: str, option: str) -> Callable[[str], datetime]:
    """A parser for Spark's datetime `pattern`; raises ValueError naming `option` if it cannot be done."""
    try:
        rx = _compile(pattern)
    except ValueError as e:
        raise ValueError(f"option '{option}' {pattern!r}: {e}") from None

    def parse(text: str) -> datetime:
        m = rx.fullmatch(text)
        if m is None:
            raise ValueError(f"{text!r} does not fit {option} {pattern!r}")
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        y = int(g["y"]) if "y" in g else (2000 + int(g["y2"]) if "y2" in g else 1970)
        mo = int(g["M"]) if "M" in g else (_month(g["Mname"]) if "Mname" in g else 1)
        hour = int(g.get("H", 0))
        if "h" in g:
            hour = int(g["h"])
            if not 1 <= hour <= 12:
                raise ValueError(f"hour {hour} out of 1-12")
            hour = hour % 12 + (12 if g.get("ampm", "am").lower() == "pm" else 0)
        elif "ampm" in g and "H" not in g:
            hour = 12 if g["ampm"].lower() == "pm" else 0
        return _instant(y, mo, int(g.get("d", 1)), hour, int(g.get("mi", 0)), int(g.get("s", 0)),
                        _micros(g.get("f")), _zone(g.get("zone")))
    return parse


def _month(name: str) -> int:
    name = name.lower()
    return next(i + 1 for i, m in enumerate(_MONTHS) if m == name or m[:3] == name)


def timestamp_parser(fmt: str, with_zone: bool = True) -> Callable[[str], datetime]:
    if fmt == ISO_TIMESTAMP or not with_zone:  # Spark's default: CAST's rules (NTZ has its own option)
        return lambda s: cast_timestamp(s, with_zone)
    return pattern_parser(fmt, "timestampFormat")


def date_parser(fmt: str) -> Callable[[str], date]:
    if fmt == ISO_DATE:
        return cast_date
    parse = pattern_parser(fmt, "dateFormat")
    return lambda s: parse(s).date()
