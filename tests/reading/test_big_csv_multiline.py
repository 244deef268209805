"""A big multiLine CSV file read in blocks of whole records: every byte once, and the records Spark's
parser finds in the whole file, whatever the block size, the line breaks and the quoting."""
import random

import numpy as np
import pyarrow as pa
import pytest

from s3sqs.config.format_options import CsvOptions, typed
from s3sqs.reading import blocks
from s3sqs.reading.blocks import cut_blocks, header_prefix, read_in_blocks, splittable
from s3sqs.reading.formats import FormatOptions
from s3sqs.reading.formats.csv import blocks as csv_blocks
from s3sqs.reading.formats.base import decode
from s3sqs.reading.formats.csv.tokens import Dialect, records
from tests.reading.test_big_files import read_by_a_task, read_whole_and_in_blocks, reads

PLAIN = ['{i},plain {i},{i}.5', '{i},"quoted, {i}",1', '{i},"two\nlines {i}",2', '{i},"three\n\nlines",3',
         '{i},"",4', '"{i}","x",5', '{i},grüße {i},6', '{i},"名前\n{i}",7']
ODD = ['{i},"a ""doubled"" quote",1', '{i},"esc \\" quote\n{i}",2', '{i},ab"c,3', '{i},  "spaced\n{i}",4',
       '{i},"after"x\n{i},5', '{i},"open\n', '{i},"cr\r{i}",6', '{i},"lf\r\nin crlf",7', '{i},\\",8']


def document(seed: int, pieces: list[str], newline: str, rows: int = 80, header: bool = True,
             empty_lines: bool = True) -> bytes:
    rnd = random.Random(seed)
    body = newline.join(rnd.choice(pieces).format(i=i) for i in range(rows))
    if empty_lines and rnd.random() < 0.3:
        body = body.replace(newline, newline * 2, 3)  # empty lines between records
    head = f'id,"name{newline}with a break",score{newline}' if header and seed % 3 == 0 else \
        f"id,name,score{newline}" if header else ""
    return (head + body + (newline if seed % 2 else "")).encode()


def opts(**given) -> CsvOptions:
    return typed("csv", {"multiLine": True, **given})


def cut(data: bytes, size: int, o: CsvOptions) -> list[bytes]:
    return list(cut_blocks(reads(data), size, lambda d: csv_blocks.block_end(d, o)))


def block_records(data: bytes, out: list[bytes], o: CsvOptions) -> list[list]:
    """The records of each block, read as the reader reads it (every block but the first after the
    header), the header's record left out but once."""
    head = header_prefix(data, o) if o.header else b""
    got = []
    for i, b in enumerate(out):
        recs = list(records(decode(b if i == 0 else head + b, "utf-8"), Dialect.of(o)))
        got += recs[1:] if i and o.header else recs
    return got


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("pieces", [PLAIN, PLAIN + ODD], ids=["plain", "odd"])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("size", [1, 9, 64, 400])
@pytest.mark.parametrize("tail", [8, None], ids=["tail8", "tail"])
def test_blocks_give_back_every_byte_and_the_records_of_the_whole_file(newline, pieces, seed, size, tail,
                                                                         monkeypatch):
    if tail:  # the cut is looked for in the block's last bytes first, then further back
        monkeypatch.setattr(csv_blocks, "_TAIL_BYTES", tail)
    data = document(seed, pieces, newline)
    o = opts(header=bool(seed % 2))
    out = cut(data, size, o)
    assert b"".join(out) == data
    assert len(out) > (3 if size < 400 else 1)
    assert block_records(data, out, o) == list(records(decode(data, "utf-8"), Dialect.of(o)))
    assert all(b.decode() for b in out)  # no block ends inside a character


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("seed", range(6))
def test_counting_quotes_cuts_plain_text_where_tokenizing_does(newline, seed, monkeypatch):
    monkeypatch.setattr(csv_blocks, "_TAIL_BYTES", 8)
    data = document(seed, PLAIN, newline, rows=60, empty_lines=False)
    d, nl = Dialect.of(opts()), newline.encode()
    cuts = 0
    for end in range(40, len(data), 37):
        part = data[:end]
        plain = csv_blocks._plain_end(np.frombuffer(part, np.uint8), d, nl)
        assert plain is not None  # plain quoting: no tokenizing
        tokenized = csv_blocks._tokenized_end(part, d, nl)
        assert tokenized == plain if not part.endswith(nl) else tokenized <= plain
        cuts += plain > 0
    assert cuts > 10


@pytest.mark.parametrize("text,expected", [
    ('a,"b\nc"\n1,2\n3,4\n', 12),            # the last whole record's start, never inside a quoted value
    ('a,b\r\n3,4\r\n1,"x\ny"\r\n5,', 5),  # not before a record whose first line break is inside it
    ('a,b\n1,"x\n', 0),                        # the quote has not closed yet: read more
    ("a,b\n", 0),
    ("a,b", 0),
])
def test_where_a_block_ends(text, expected):
    assert csv_blocks.block_end(text.encode(), opts()) == expected


@pytest.mark.parametrize("head,expected", [
    (b'id,"na\nme"\n1,2\n', 11), (b"\xef\xbb\xbfid\r\n1\r\n", 7), (b"\n\nid\n1\n", 5), (b'id,"na', None),
    (b"id,name", None)])
def test_the_header_of_a_multiline_file_is_its_first_record(head, expected):
    assert header_prefix(head, opts(header=True)) == (None if expected is None else head[:expected])


@pytest.mark.parametrize("given,size,streamed", [
    ({}, blocks.BIG_FILE_BYTES + 1, True), ({}, blocks.BIG_FILE_BYTES, False),
    ({"encoding": "utf-16"}, blocks.BIG_FILE_BYTES + 1, True), ({"sep": "§"}, blocks.BIG_FILE_BYTES + 1, False)])
def test_which_multiline_files_are_streamed_and_none_split(given, size, streamed):
    o = opts(**given)
    assert read_in_blocks("csv", o, "k/f.csv", size) is streamed
    assert not splittable("csv", o, "k/f.csv")
    assert not read_in_blocks("json", typed("json", {"multiLine": True}), "k/f.json", blocks.BIG_FILE_BYTES + 1)


FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("score", pa.float64())]


@pytest.mark.parametrize("mode,rescued", [("PERMISSIVE", "_rescued"), ("DROPMALFORMED", None)])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("pieces", [PLAIN, PLAIN + ODD], ids=["plain", "odd"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_rows_in_blocks_are_the_rows_of_the_whole_file(mode, rescued, newline, pieces, gz, tmp_path):
    data = document(3, pieces, newline, rows=300)  # a header whose quoted name holds a line break
    fo = FormatOptions("csv", opts(header=True), mode, rescued)
    whole, parts = read_whole_and_in_blocks(data, FIELDS, fo, tmp_path, gz, 500)
    assert len(parts) > 10 and whole.table.num_rows > 150


def test_a_big_multiline_csv_file_goes_through_the_task_s_reader_in_blocks(tmp_path, monkeypatch):
    data = ("id,name,score\n" + "".join(f'{i},"line\nbreak {i}",{i}.5\n' for i in range(5000))).encode()
    got, seen = read_by_a_task(data, FIELDS, FormatOptions("csv", opts(header=True)), tmp_path, monkeypatch)
    assert got.column("id").to_pylist() == list(range(5000))
    assert got.column("name").to_pylist()[:2] == ["line\nbreak 0", "line\nbreak 1"]
    assert len(seen) > 10 and max(seen) < 17 << 10  # never the whole file at once
