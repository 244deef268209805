"""Spark's datetime parsing shared by the text readers (expectations read from Spark's CAST and readers):
lenient by default, strict by a pattern, micros/days since the epoch, BadDatetime when text does not fit."""
import pytest

from s3sqs.config.format_options import ISO_DATE, ISO_TIMESTAMP
from s3sqs.reading.formats.common.spark_datetime import (BadDatetime, date_parser, lenient_date, lenient_timestamp,
                                                  or_none, timestamp_parser)

US = 1_000_000
T2020 = 1577836800 * US  # 2020-01-01T00:00:00Z
D20200115 = 18276


def _ts(y, mo, d, h=0, mi=0, s=0, us=0):
    from datetime import datetime, timezone
    return int(datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).timestamp()) * US + us


@pytest.mark.parametrize("text,expected", [
    ("2020-01-01T00:00:00Z", T2020), ("2020-01-01 00:00:00", T2020), ("2020", T2020), ("2020-1-1", T2020),
    ("2020-01-01T02:00:00+02:00", T2020), ("2020-01-01T02:00:00+0200", T2020), ("2020-01-01T01:00:00+1", T2020),
    ("2020-01-01T01:00:00 Europe/Paris", T2020), ("2019-12-31T16:00:00 PST", T2020),
    ("2020-01-01T00:00:00.1234567Z", T2020 + 123456), ("2020-01-01T00:00:00.", T2020),
    ("2020-01-01T01:00:00GMT+1", T2020), (" 2020-01-01T00:00:00 ", T2020), ("2020-01-01T00", T2020),
    ("2019-12-31T19:00:00America/New_York", T2020), ("2019-12-31T19:00:00 EST", T2020),
    ("2020-02-30", None), ("2020-01-01t00:00:00", None), ("2020-01-01T00:00Z", None), ("2020-01-01T", None),
    ("x", None), ("2020-01-01T00:00:00z", None), ("20200101", None), ("2020-01-01T25:00:00", None),
    ("2020-01-01T00:00:00 Nowhere/City", None),
])
def test_default_timestamps_follow_spark_s_lenient_rules(text, expected):
    assert or_none(timestamp_parser(ISO_TIMESTAMP))(text) == expected
    if expected is None:
        with pytest.raises(BadDatetime):
            lenient_timestamp(text)


def test_timestamp_ntz_refuses_a_zone_and_ignores_timestamp_format():
    ntz = timestamp_parser("dd/MM/yyyy", ntz=True)  # NTZ has its own option (timestampNTZFormat), at its default
    assert ntz("2020-01-01 00:00:00") == T2020
    for bad in ("2020-01-01T00:00:00Z", "01/01/2020", "10:00:00"):
        with pytest.raises(BadDatetime):
            ntz(bad)


@pytest.mark.parametrize("text,days", [
    ("2020-01-15", D20200115), ("2020-1-15", D20200115), ("2020-01", D20200115 - 14), ("2020", D20200115 - 14),
    ("2020-01-15T99:99", D20200115), (" 2020-01-15", D20200115), ("2020-01-15 x", D20200115),
    ("2020-01-15GMT", D20200115),
    ("2020-01-15x", None), ("20200115", None), ("2020-02-30", None), ("2020-01-01t", None), ("2020-01 x", None),
])
def test_default_dates_follow_spark_s_lenient_rules(text, days):
    assert or_none(date_parser(ISO_DATE))(text) == days
    assert or_none(lenient_date)(text) == days


def test_without_fallback_the_default_date_format_is_strict():
    strict = date_parser(None, fallback=False)
    assert strict("2020-01-15") == D20200115
    for bad in ("2020-1-15", "2020-01", "2020-01-15T10:00", "02020-01-15"):
        with pytest.raises(BadDatetime):
            strict(bad)


def test_patterns_are_strict_and_case_insensitive():
    ts = timestamp_parser("yyyy/MM/dd HH:mm:ss[.SSS] Z")
    assert ts("2020/01/01 01:00:00.5 +0100") == T2020 + 500000
    p = timestamp_parser("dd/MM/yyyy HH:mm:ss")
    assert p("15/01/2020 10:20:30") == _ts(2020, 1, 15, 10, 20, 30)
    for bad in ("5/1/2020 10:20:30", "15/01/2020 10:20", "2020-01-15T10:20:30", "30/02/2020 10:20:30",
                "2020/1/01 01:00:00 +0100"):
        with pytest.raises(BadDatetime):
            p(bad)
    assert timestamp_parser("yyyy-MM-dd'T'HH:mm")("2020-01-15t10:20") == _ts(2020, 1, 15, 10, 20)
    assert timestamp_parser("dd/MM/yyyy HH:mm")("02/01/2024 10:11") == _ts(2024, 1, 2, 10, 11)


def test_pattern_letters():
    assert timestamp_parser("MMM dd yyyy hh:mm:ss a")("jan 01 2020 12:00:00 AM") == T2020
    assert timestamp_parser("MM/dd/yyyy hh:mm:ss a")("01/15/2020 10:20:30 PM") == _ts(2020, 1, 15, 22, 20, 30)
    assert timestamp_parser("MMM d, yyyy h:mm a")("Jan 2, 2024 3:04 PM") == _ts(2024, 1, 2, 15, 4)
    with pytest.raises(BadDatetime):
        timestamp_parser("dd/MM/yyyy hh:mm a")("01/01/2020 13:00 PM")  # h is 1-12
    assert timestamp_parser("yyyy-MM-dd a")("2020-01-15 pm") == _ts(2020, 1, 15, 12)  # pm, no hour: noon
    assert timestamp_parser("yyyy-MM-dd kk:mm")("2020-01-15 24:00") == _ts(2020, 1, 15)
    assert timestamp_parser("EEE, dd MMMM yyyy")("Wed, 15 January 2020") == _ts(2020, 1, 15)
    assert timestamp_parser("yy-MM-dd")("20-01-15") == _ts(2020, 1, 15)
    assert timestamp_parser("yyyy-DDD")("2020-032") == _ts(2020, 2, 1)
    assert date_parser("yyyy-MM-dd", fallback=False)("+02020-01-15") == D20200115  # more digits than letters: signed
    assert date_parser("dd.MM.yyyy")("01.01.2020") == 18262
    assert date_parser("dd MMM yyyy")("15 jan 2020") == D20200115
    assert date_parser("yyyy-MM-dd HH:mm")("2020-01-15 23:59") == D20200115


def test_pattern_zones():
    assert timestamp_parser("yyyy-MM-dd HH:mm:ss[.SSS] Z")("2020-01-15 10:20:30.1 +0100") == \
        _ts(2020, 1, 15, 9, 20, 30, 100000)
    assert timestamp_parser("yyyy-MM-dd HH:mmXXX")("2020-01-01 00:00Z") == T2020
    assert timestamp_parser("yyyy-MM-dd HH:mmXXX")("2020-01-01 01:00+01:00") == T2020
    assert timestamp_parser("yyyy-MM-dd HH:mm VV")("2020-01-01 01:00 Europe/Paris") == T2020
    assert timestamp_parser("yyyy-MM-dd HH:mm z")("2019-12-31 16:00 PST") == T2020
    with pytest.raises(BadDatetime):
        timestamp_parser("yyyy-MM-dd HH:mmXXX")("2020-01-01 01:00+0100")


def test_default_pattern_text_reads_leniently_and_a_bad_pattern_names_its_option():
    assert timestamp_parser(ISO_TIMESTAMP)("2020-01-01") == T2020 and timestamp_parser(None)("2020") == T2020
    assert date_parser(ISO_DATE)("2020") == 18262
    with pytest.raises(ValueError, match="option 'dateFormat'"):
        date_parser("yyyy-MM-dd G")
    with pytest.raises(ValueError, match="option 'timestampFormat'"):
        timestamp_parser("yyyy-MM-dd 'T")
