"""Text into the declared types as Spark's CSV reader converts it (expectations read from Spark)."""
import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from s3sqs.config.format_options import typed
from s3sqs.reading.formats.csv.rows import convert_column
from s3sqs.reading.formats.csv.values import exact_cast

OPTS = typed("csv", {})


def convert(values, typ, **opts):
    arr, misfits = convert_column(values, typ, typed("csv", opts))
    return arr.to_pylist(), misfits


def test_integers_take_a_sign_but_no_space_or_fraction():
    assert convert(["1", "+1", "-1", " 1", "1 ", "007", "1.0", "1e3", "2147483648"], pa.int32()) == (
        [1, 1, -1, None, None, 7, None, None, None], [3, 4, 6, 7, 8])
    assert convert(["127", "128"], pa.int8()) == ([127, None], [1])


def test_the_fast_cast_of_integers_refuses_hexadecimal_where_a_value_holds_it():
    assert exact_cast(pa.array(["10", "0x10"]), pa.int64(), OPTS) is None
    assert exact_cast(pa.chunked_array([["1"], ["0X10"]]), pa.int64(), OPTS) is None
    # an x in the buffer but not in the values (sliced away) is looked at and let through
    assert exact_cast(pa.array(["0x10", "5"]).slice(1), pa.int64(), OPTS).to_pylist() == [5]
    assert exact_cast(pa.array(["-7", None, "x"]).slice(0, 2), pa.int64(), OPTS).to_pylist() == [-7, None]


def test_doubles_follow_java():
    got, misfits = convert(["1.5", " 1.5 ", "1.5d", "0x1p3", "NaN", "nan", "Inf", "-Inf", "inf", "Infinity",
                            "+Inf", ".5", "5.", "--1"], pa.float64())
    assert got[:4] == [1.5, 1.5, 1.5, 8.0] and math.isnan(got[4]) and got[5] is None
    assert got[6:] == [math.inf, -math.inf, None, math.inf, None, 0.5, 5.0, None]
    assert misfits == [5, 8, 10, 13]


def test_booleans_are_true_or_false_in_any_case_only():
    assert convert(["true", "TRUE", "tRuE", "false", "1", "yes", " true"], pa.bool_()) == (
        [True, True, True, False, None, None, None], [4, 5, 6])


def test_decimals_drop_commas_and_round_half_up():
    assert convert(["1.235", "1.225", "-1.235", "1e3", "1,000.5", "12345678901", " 1.5"], pa.decimal128(10, 2)) == (
        [Decimal("1.24"), Decimal("1.23"), Decimal("-1.24"), Decimal("1000.00"), Decimal("1000.50"), None, None],
        [5, 6])


def test_a_custom_timestamp_format_has_no_fallback():
    got, misfits = convert(["15/01/2020 10:20:30", "2020-01-15T10:20:30"], pa.timestamp("us", tz="UTC"),
                           timestampFormat="dd/MM/yyyy HH:mm:ss")
    assert [g.replace(tzinfo=None) if g else g for g in got] == [dt.datetime(2020, 1, 15, 10, 20, 30), None]
    assert misfits == [1]
