"""A big file in an encoding whose line-break bytes may be part of another character (UTF-16, UTF-32,
Shift JIS) is decoded as it streams and read in blocks of UTF-8: the rows of the whole file, whatever
the chunks the stream gives, bad bytes included."""

import pyarrow as pa
import pytest

from s3sqs.config.format_options import CsvOptions
from s3sqs.reading.big import RangeStream
from s3sqs.reading.blocks import read_in_blocks, splittable, transcoded
from s3sqs.reading.formats import FormatOptions
from tests.reading.test_big_files import read_whole_and_in_blocks

import pyarrow.fs as pafs

CSV = "id,name\n" + "".join(f"{i},名前 {i} ü\n" if i % 3 else f'{i},"a, b {i}"\n' for i in range(300))
CSV_RECORDS = "id,name\n" + "".join(f"{i},名前 {i} ü\n" if i % 3 else f'{i},"two\nlines {i}"\n' for i in range(300))
JSON = "".join(f'{{"id": {i}, "name": "名前 {i} ü"}}\n' for i in range(300))
XML = "<rows>\n" + "".join(f"<row><id>{i}</id><name>名前 {i} ü</name></row>\n" for i in range(300)) + "</rows>\n"
FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string())]
CASES = [("csv", CSV, {"header": True}), ("csv", CSV_RECORDS, {"header": True, "multiLine": True}), ("json", JSON, {}),
         ("xml", XML, {"rowTag": "row"})]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "shift_jis"])
@pytest.mark.parametrize("fmt,text,given", CASES, ids=["csv", "csv-multiline", "json", "xml"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_rows_decoded_as_they_stream_are_the_rows_of_the_whole_file(encoding, fmt, text, given, gz, tmp_path):
    if encoding == "shift_jis":
        text = text.replace("ü", "ア")  # Shift JIS has no ü
    fo = FormatOptions(fmt, {**given, "encoding": encoding}, "PERMISSIVE")
    whole, parts = read_whole_and_in_blocks(text.encode(encoding), FIELDS, fo, tmp_path, gz, 37)
    assert len(parts) > 10 and whole.table.num_rows == 300 and whole.malformed == 0


@pytest.mark.parametrize("encoding,data", [
    ("utf-16-le", "ab\ncd".encode("utf-16-le") + b"\x00"),  # an odd byte at the end
    ("utf-16", "\ufeffab".encode("utf-16-be")[:-1] + b"\xd8\x00" + "\ncd\n".encode("utf-16-be")),  # a lone surrogate
    ("shift_jis", "ア\n".encode("shift_jis") + b"\x81\n" + "イ".encode("shift_jis")),  # a lead byte alone
])
@pytest.mark.parametrize("chunk", [1, 2, 3, 1000])
def test_a_bad_byte_becomes_what_the_whole_file_s_decoding_gives(encoding, data, chunk, tmp_path):
    path = tmp_path / "f"
    path.write_bytes(data)
    stream = RangeStream(pafs.LocalFileSystem(), str(path), None, encoding=encoding)
    got = b""
    while piece := stream.read(chunk):
        got += piece
    stream.close()
    assert got.decode("utf-8") == data.decode(encoding, errors="replace") and "\ufffd" in got.decode("utf-8")


def test_which_encodings_are_decoded_first_and_never_split():
    for enc in ("utf-16", "UTF-32", "shift_jis", "gb18030"):
        o = CsvOptions(encoding=enc)
        assert transcoded(o) and not splittable("csv", o, "k/f.csv") and read_in_blocks("csv", o, "k/f.csv", 1 << 30)
    for enc in ("utf-8", "latin-1", "ascii", "cp1252"):
        o = CsvOptions(encoding=enc)
        assert not transcoded(o) and splittable("csv", o, "k/f.csv")
