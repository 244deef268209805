"""A big XML file read in blocks of whole rows: every byte once, the rows Spark's scan finds in the whole
text, and the rows the reader gives for the whole file, whatever the block size."""
import random

import pyarrow as pa
import pytest

from s3sqs.core.files import Piece
from s3sqs.reading import blocks
from s3sqs.reading.big import stream_rows
from s3sqs.reading.blocks import cut_blocks, read_in_blocks
from s3sqs.reading.filesystems import Filesystems
from s3sqs.config.format_options import XmlOptions, typed
from s3sqs.reading.formats import FormatOptions, MalformedFile, reader_of, xml
from s3sqs.reading.formats.xml.records import records
from tests.reading.test_big_files import local, read_by_a_task, read_whole_and_in_blocks, reads

PIECES = [
    "<row><id>{i}</id><name>n{i}</name></row>\n",
    '<row id="{i}"><name>grüße {i}</name></row>\n',
    '<row id="{i}" name="a&gt;b"/>\n',
    "<row>\n  <id>{i}</id>\n  <row><id>99</id></row>\n  <name>nested {i}</name>\n</row>\n",  # a row inside a row
    "<!-- <row><id>-1</id></row> -->\n",       # not a row: inside a comment
    "<![CDATA[ <row><id>-2</id></row> ]]>\n",  # nor inside CDATA
    "<other><id>-3</id></other>\n",
    "<row><id>{i}</id><!-- a comment </row> in a row --><name>c{i}</name></row>\n",
    "<row><id>x{i}</id><name>not a number</name></row>\n",
    "<row><id>{i}</id><name><![CDATA[<b>{i}</b>]]></name></row>\n",
    "<rows2><id>-4</id></rows2>\n",
    "<row><id>{i}</id><name>名前{i}</name></row>",
    "<row\n  id='{i}'\n><name>attrs over lines</name></row>\n",
    "text between rows {i}\n",
    "grüße between rows {i} 名前\n",
]


def document(seed: int, rows: int = 60) -> bytes:
    rnd = random.Random(seed)
    body = "".join(rnd.choice(PIECES).format(i=i) for i in range(rows))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n' + body + "</rows>\n").encode()


def xml_blocks(data: bytes, size: int, tag: str = "row") -> list[bytes]:
    return list(cut_blocks(reads(data), size, lambda d: xml.block_end(d, XmlOptions(row_tag=tag))))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("size", [1, 7, 40, 333])
def test_blocks_give_back_every_byte_and_the_rows_spark_s_scan_finds(seed, size):
    data = document(seed)
    out = xml_blocks(data, size)
    assert b"".join(out) == data
    assert len(out) > 3
    whole = records(data.decode(), "row")
    assert [r for b in out for r in records(b.decode(), "row")] == whole
    assert all(b.decode() for b in out)  # no block ends inside a character


def test_a_row_longer_than_a_block_makes_a_longer_block():
    data = b"<rows><row>" + b"x" * 500 + b"</row><row>y</row></rows>"
    out = xml_blocks(data, 16)
    assert out[:2] == [b"<rows>", b"<row>" + b"x" * 500 + b"</row>"] and b"".join(out) == data


def test_a_row_tag_outside_ascii_is_found_in_the_file_s_encoding():
    data = "<r><é>1</é><é>2</é></r>".encode("latin-1")
    out = list(cut_blocks(reads(data), 3, lambda d: xml.block_end(d, XmlOptions(row_tag="é", encoding="latin-1"))))
    assert out[:2] == [b"<r>", "<\xe9>1</\xe9>".encode("latin-1")] and b"".join(out) == data


FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string())]


@pytest.mark.parametrize("mode,rescued", [("PERMISSIVE", "_rescued"), ("PERMISSIVE", None), ("DROPMALFORMED", None)])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_rows_in_blocks_are_the_rows_of_the_whole_file(mode, rescued, gz, tmp_path):
    fo = FormatOptions("xml", {"rowTag": "row", "encoding": "utf-8"}, mode, rescued)
    whole, parts = read_whole_and_in_blocks(document(3, rows=200), FIELDS, fo, tmp_path, gz, 300)
    assert len(parts) > 10 and whole.table.num_rows > 80


def test_plain_rows_in_blocks_take_the_fast_path_block_by_block(tmp_path):
    data = ("<rows>\n" + "".join(f"<row><id>{i}</id><name>n{i}</name></row>\n" for i in range(3000)) + "</rows>\n").encode()
    path = tmp_path / "plain.xml"
    path.write_bytes(data)
    fo = FormatOptions("xml", {"rowTag": "row", "encoding": "utf-8"})
    before = xml.fast.TAKEN.copy()
    parts = list(stream_rows(Filesystems(None), Piece(local(path), 0, None), reader_of("xml"), FIELDS, fo, 4096))
    assert len(parts) > 10 and xml.fast.TAKEN["fast"] - before["fast"] == len(parts)
    assert [r["id"] for p in parts for r in p.table.to_pylist()] == list(range(3000))


@pytest.mark.parametrize("opts,size,streamed", [
    ({"rowTag": "row", "encoding": "utf-8"}, blocks.BIG_FILE_BYTES + 1, True),
    ({"rowTag": "row", "encoding": "utf-8"}, blocks.BIG_FILE_BYTES, False),
    ({"rowTag": "row", "encoding": "utf-16"}, blocks.BIG_FILE_BYTES + 1, True),  # decoded as it streams
])
def test_which_xml_files_are_streamed(opts, size, streamed):
    assert read_in_blocks("xml", typed("xml", opts), "k/f.xml", size) is streamed
    assert read_in_blocks("xml", typed("xml", opts), "k/f.xml.gz", blocks.BIG_COMPRESSED_BYTES + 1)


def test_a_big_xml_file_goes_through_the_task_s_reader_in_blocks(tmp_path, monkeypatch):
    data = ("<rows>\n" + "".join(f"<row><id>{i}</id><name>n{i}</name></row>\n" for i in range(5000)) + "</rows>\n").encode()
    fo = FormatOptions("xml", {"rowTag": "row", "encoding": "utf-8"})
    got, seen = read_by_a_task(data, FIELDS, fo, tmp_path, monkeypatch)
    assert got.column("id").to_pylist() == list(range(5000))
    assert len(seen) > 10 and max(seen) < 16 << 10  # never the whole file at once


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_text_after_the_last_row_is_no_reason_to_reject_a_big_file(gz, tmp_path):
    # The last block holds only what follows the last row; it does not begin the file, so it is no sign
    # that the file is not XML (the whole file reads without a fault).
    data = ("<rows>\n" + "".join(f"<row><id>{i}</id><name>n{i}</name></row>\n" for i in range(40))
            + "closing words, not markup\n</rows>\n").encode()
    whole, parts = read_whole_and_in_blocks(data, FIELDS, FormatOptions("xml", {"rowTag": "row"}), tmp_path, gz, 64)
    assert whole.table.num_rows == 40 and len(parts) > 5


def test_a_big_file_that_is_not_xml_is_still_rejected_at_its_first_block(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"id,name\n" + b"".join(b"%d,n%d\n" % (i, i) for i in range(500)))
    fo = FormatOptions("xml", {"rowTag": "row"})
    with pytest.raises(MalformedFile, match="not an XML file"):
        list(stream_rows(Filesystems(None), Piece(local(path), 0, None), reader_of("xml"), FIELDS, fo, 64))
