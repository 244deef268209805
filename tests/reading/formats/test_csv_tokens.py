"""Splitting CSV text into records as Spark's parser does; each expectation was read from Spark itself
(PySpark 4.3 and 4.0.2, see tests/reading/formats/test_parity_csv.py for the same cases end to end)."""
import pytest

from s3sqs.config.format_options import typed
from s3sqs.reading.formats.csv.tokens import Dialect, QuotedEmpty, records


def split(text: str, **opts) -> list[list]:
    return list(records(text, Dialect.of(typed("csv", opts))))


@pytest.mark.parametrize("text,opts,expected", [
    ('x,"a""b"\n', {}, [["x", '"a""b"']]),                       # a doubled quote is no escape by default
    ('x,"a""b"\n', {"escape": '"'}, [["x", 'a"b']]),               # ... unless escape is the quote
    ('x,"a\\"b"\n', {}, [["x", 'a"b']]),
    ('x,"a\\nb"\n', {}, [["x", "a\\nb"]]),
    ('x,"a\\\\"\n', {}, [["x", "a\\"]]),
    ('x,a\\"b\n', {}, [["x", 'a\\"b']]),
    ('x,"abc"def\n', {}, [["x", '"abc"def']]),
    ('x,"abc"  \n', {}, [["x", "abc"]]),
    ('x,  "abc"\n', {}, [["x", '  "abc"']]),
    ('x,  "abc"\n', {"ignoreLeadingWhiteSpace": True}, [["x", "abc"]]),
    (' x , y \n', {"ignoreLeadingWhiteSpace": True, "ignoreTrailingWhiteSpace": True}, [["x", "y"]]),
    ('x," y "\n', {"ignoreLeadingWhiteSpace": True, "ignoreTrailingWhiteSpace": True}, [["x", " y "]]),
    ('1,a,\n', {}, [["1", "a", None]]),
    ('1,"abc\n2,c\n', {}, [["1", "abc"], ["2", "c"]]),              # an unclosed quote ends with its line
    ('1,"\n', {}, [["1", '"']]),                                    # a quote alone stays
    ('1,"a"  x,y\n', {}, [["1", '"a"  x', "y"]]),
    ('x,"a"\\, "a",b\n', {}, [["x", '"a"\\ "a"', "b"]]),            # the escape after a closing quote
])
def test_quoting_as_spark_reads_it(text, opts, expected):
    assert split(text, **opts) == expected


def test_quoted_empty_is_told_apart_from_unquoted_empty():
    (row,) = split('"",\n')
    assert isinstance(row[0], QuotedEmpty) and row[1] is None


def test_lines_without_multiline():
    assert split('1,"a\nb"\n2,c\n') == [["1", "a"], ['b"'], ["2", "c"]]   # a quoted break ends the row
    assert split("1,a\n\n   \n\t\n2,b\r3,c\r\n") == [["1", "a"], ["2", "b"], ["3", "c"]]
    assert split("#c\n1,a\n #x\n2,#b\n", comment="#") == [["1", "a"], [" #x"], ["2", "#b"]]
    assert split("1,a;2,b\n;3,c", lineSep=";") == [["1", "a"], ["2", "b\n"], ["3", "c"]]
    assert split("1,a\rb\n2,b\n", lineSep="\n") == [["1", "a\rb"], ["2", "b"]]
    assert split("1\ta\n\t\n2\tb\n", sep="\t") == [["1", "a"], ["2", "b"]]


def test_multiline():
    ml = {"multiLine": True}
    assert split('1,"a\nb"\n2,c\n', **ml) == [["1", "a\nb"], ["2", "c"]]
    assert split('1,"a\r\nb"\r\n2,c\r\n', **ml) == [["1", "a\nb"], ["2", "c"]]   # \r\n inside quotes reads \n
    assert split("1,a\n\n   \n2,b\n", **ml) == [["1", "a"], ["   "], ["2", "b"]]  # a blank line is a value
    assert split('#c\n1,"a\n#b"\n #x\n', comment="#", **ml) == [["1", "a\n#b"], [" #x"]]
    assert split('1,"a;x";2,b\n;3,c', lineSep=";", **ml) == [["1", "a;x"], ["2", "b\n"], ["3", "c"]]
    assert split("a\n  \t\nb", ignoreLeadingWhiteSpace=True, **ml) == [["a"], ["b"]]
