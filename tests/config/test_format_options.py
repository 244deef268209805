"""Each format's options class: a field per option of the validation table, named after Spark's option in
snake case, built from what reader_options validated, and carried to the executors inside FormatOptions."""
import dataclasses
import pickle
import re

import pytest

from s3sqs.config.format_options import (FORMAT_OPTIONS, OPTIONS_CLASSES, BinaryFileOptions, CsvOptions, NoOptions,
                                         XmlOptions, reader_options, typed)
from s3sqs.reading.formats import FormatOptions


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize("fmt", sorted(OPTIONS_CLASSES))
def test_every_option_is_a_field_named_after_spark_s_option(fmt):
    fields = {f.name: f.default for f in dataclasses.fields(OPTIONS_CLASSES[fmt])}
    assert fields == {snake(name): opt.default for name, opt in FORMAT_OPTIONS[fmt].items()}


@pytest.mark.parametrize("fmt", sorted(OPTIONS_CLASSES))
def test_the_defaults_validated_are_the_class_s_defaults(fmt):
    given = {"rowTag": "row"} if fmt == "xml" else {}
    assert typed(fmt, reader_options(fmt, given)) == OPTIONS_CLASSES[fmt](**({"row_tag": "row"} if given else {}))


def test_validated_text_becomes_typed_attributes():
    csv = typed("csv", reader_options("csv", {"sep": ";", "header": "true", "encoding": "ISO-8859-1", "quote": ""}))
    assert (csv.sep, csv.header, csv.encoding, csv.quote, csv.multi_line) == (";", True, "iso8859-1", "", False)
    assert typed("binaryFile", reader_options("binaryFile", {"maxFileSize": "1k"})) == BinaryFileOptions(1024)
    assert typed("parquet", reader_options("parquet", {})) == NoOptions()


def test_format_options_hold_the_class_and_travel_as_it():
    fo = FormatOptions("xml", {"rowTag": "book", "encoding": "utf-16"}, "DROPMALFORMED", "_rescued")
    assert fo.options == XmlOptions(row_tag="book", encoding="utf-16")
    assert fo.in_utf8().options == XmlOptions(row_tag="book") and fo.after_start().options is fo.options
    assert pickle.loads(pickle.dumps(fo)) == fo
    assert FormatOptions("csv", CsvOptions(sep="|")).options == CsvOptions(sep="|")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fo.options.row_tag = "other"
