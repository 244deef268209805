"""Big files without Spark: blocks cut at line breaks, byte ranges by Hadoop's line rule, the driver's
split into pieces, and the rows of a file read in blocks or pieces equal to its rows read whole."""
import gzip
import io
import json
import random

import pyarrow as pa
import pytest

from s3sqs.core.files import Piece, S3File
from s3sqs.planning import partitions
from s3sqs.reading import blocks
from s3sqs.reading.big import raw_blocks, stream_rows
from s3sqs.reading.blocks import header_prefix, line_blocks, split_ranges, splittable
from s3sqs.reading.filesystems import Filesystems
from s3sqs.config.format_options import CsvOptions, typed
from s3sqs.reading.formats import FormatOptions, MalformedFile, avro, reader_of
from s3sqs.reading.formats.avro import pieces as avro_pieces
from s3sqs.reading.reader import ReadSpec, read_partition

import pyarrow.fs as pafs


def reads(data: bytes):
    pos = 0

    def read(n):
        nonlocal pos
        chunk = data[pos:pos + min(n, 5)]  # short reads, as a network stream gives them
        pos += len(chunk)
        return chunk
    return read


def local(path) -> S3File:
    return S3File("", str(path).lstrip("/"), path.stat().st_size, event_ms=1_700_000_000_000, scheme="file")


def read_whole_and_in_blocks(data: bytes, fields: list[pa.Field], fo: FormatOptions, tmp_path, gz: bool,
                             block_bytes: int) -> tuple:
    """A file's rows read whole and streamed in blocks (gzipped when `gz`), asserted the same; returns both."""
    reader = reader_of(fo.file_format)
    path = tmp_path / ("f.gz" if gz else "f")
    path.write_bytes(gzip.compress(data) if gz else data)
    whole = reader.read(pa.py_buffer(data), fields, fo, local(path))
    parts = list(stream_rows(Filesystems(None), Piece(local(path), 0, None), reader, fields, fo, block_bytes))
    assert pa.concat_tables([p.table for p in parts]).to_pylist() == whole.table.to_pylist()
    assert sum(p.malformed for p in parts) == whole.malformed and sum(p.dropped for p in parts) == whole.dropped
    return whole, parts


def read_by_a_task(data: bytes, fields: list[pa.Field], fo: FormatOptions, tmp_path, monkeypatch) -> tuple:
    """The rows a task reads from the file, over 1 KiB so read in blocks of 8 KiB, and the size of each
    buffer its format's reader was given."""
    path = tmp_path / "big"
    path.write_bytes(data)
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 1 << 10)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 8 << 10)
    module = reader_of(fo.file_format)
    seen, read = [], module.read
    monkeypatch.setattr(module, "read", lambda d, *a, **k: seen.append(d.size) or read(d, *a, **k))
    got = pa.Table.from_batches(list(read_partition([local(path)], ReadSpec(fo), pa.schema(fields), 1)))
    return got, seen


@pytest.mark.parametrize("seed", range(20))
def test_blocks_are_whole_lines_and_give_back_every_byte(seed):
    rnd = random.Random(seed)
    data = b"".join(rnd.choice([b"a", b"bc", b"\n", b"\r\n", b"xyz,1"]) for _ in range(rnd.randint(0, 300)))
    size = rnd.randint(1, 40)
    out = list(line_blocks(reads(data), size))
    assert b"".join(out) == data
    assert all(b.endswith(b"\n") for b in out[:-1])
    assert all(len(b) < 2 * size + 60 for b in out if b.count(b"\n") > 1)  # bounded unless one line is long


@pytest.mark.parametrize("seed", range(40))
def test_with_a_limit_the_stream_ends_after_the_first_separator_starting_at_or_past_it(seed):
    rnd = random.Random(seed)
    sep = rnd.choice([b"\n", b"||", b"\r\n", b"<>|"])
    data = b"".join(rnd.choice([b"a", b"|", b"\n", b"\r", sep, b"xyz"]) for _ in range(rnd.randint(0, 200)))
    limit = rnd.randint(0, len(data) + 2)
    at = data.find(sep, limit)
    out = list(line_blocks(reads(data), rnd.randint(1, 30), sep, limit))
    assert b"".join(out) == (data if at < 0 else data[:at + len(sep)])
    assert all(b.endswith(sep) for b in out[:-1])


def test_a_block_never_ends_inside_a_multi_byte_separator():
    data = b"a||bb||ccc||d"
    assert list(line_blocks(reads(data), 3, b"||")) == [b"a||", b"bb||", b"ccc||", b"d"]


def lines_of_pieces(data: bytes, piece: int, tmp_path, block: int = 4) -> list[bytes]:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    f = local(path)
    fs = pafs.LocalFileSystem()
    out = []
    for start, length in split_ranges(len(data), piece):
        got = b"".join(raw_blocks(fs, Piece(f, start, length), {}, block))
        out.extend(got.splitlines(keepends=True))
    return out


@pytest.mark.parametrize("seed", range(25))
def test_pieces_read_every_line_once_by_hadoop_s_rule(seed, tmp_path):
    rnd = random.Random(seed)
    data = b"".join(rnd.choice([b"x", b"yy", b"\n", b"zzzzzzz"]) for _ in range(rnd.randint(1, 200)))
    assert lines_of_pieces(data, rnd.randint(1, 30), tmp_path) == data.splitlines(keepends=True)


def test_the_line_at_a_piece_s_end_belongs_to_that_piece(tmp_path):
    # Pieces [0, 4) and [4, 8): "abc\n" ends at 3, so the line starting at 4 is read by the first piece
    # (Hadoop reads on while its position is <= end); the second skips it.
    data = b"abc\ndef\nghi\n"
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    f, fs = local(path), pafs.LocalFileSystem()
    assert b"".join(raw_blocks(fs, Piece(f, 0, 4), {}, 2)) == b"abc\ndef\n"
    assert b"".join(raw_blocks(fs, Piece(f, 4, 4), {}, 2)) == b"ghi\n"
    assert b"".join(raw_blocks(fs, Piece(f, 8, 4), {}, 2)) == b""


def test_split_ranges_and_split_files():
    assert split_ranges(10, 4) == [(0, 4), (4, 4), (8, 2)]
    assert split_ranges(4, 4) == [(0, 4)]
    with pytest.raises(ValueError, match="positive"):
        split_ranges(10, 0)
    big, small, gz = S3File("b", "big.csv", 10), S3File("b", "s.csv", 3), S3File("b", "big.csv.gz", 10)
    items = partitions.split_files([big, small, gz], lambda f: splittable("csv", CsvOptions(), f.path), 4)
    assert items == [Piece(big, 0, 4), Piece(big, 4, 4), Piece(big, 8, 2), small, gz]
    assert [partitions.item_size(i) for i in items] == [4, 4, 2, 3, 10]
    groups = partitions.pack(items, partitions.item_size, 4, 2, open_cost=0)
    assert sorted(x for g in groups for x in map(repr, g)) == sorted(map(repr, items))


def test_pieces_shrink_to_spread_a_batch_over_its_slots_as_spark_s_max_split_bytes():
    mib = 1 << 20
    one = [S3File("b", "big.csv", 96 * mib)]
    assert partitions.split_bytes(one, 128 * mib, 2) == 50 * mib  # (96 + 4) / 2: both cores read it
    assert partitions.split_bytes(one, 32 * mib, 2) == 32 * mib   # never above maxPartitionBytes
    assert partitions.split_bytes([S3File("b", "s.csv", 100)], 128 * mib, 8) == 4 * mib  # nor under the open cost
    many = [S3File("b", f"{i}.csv", 20 * mib) for i in range(25)]
    assert partitions.split_bytes(many, 128 * mib, 2) == 128 * mib  # plenty of bytes per core: pieces as given


@pytest.mark.parametrize("fmt,opts,ok", [
    ("csv", {}, True), ("csv", {"multiLine": True}, False), ("json", {"multiLine": True}, False),
    ("json", {"encoding": "utf-16"}, False), ("text", {"wholetext": True}, False), ("xml", {}, False),
    ("parquet", {}, False), ("orc", {}, False), ("avro", {}, True), ("csv", {"lineSep": ";"}, False)])
def test_which_files_split(fmt, opts, ok):
    assert splittable(fmt, typed(fmt, opts), "k/f") is ok


def test_the_csv_header_prefix_takes_blank_and_comment_lines_before_it():
    assert header_prefix(b"\n# c\nid,name\n1,a\n", CsvOptions(comment="#")) == b"\n# c\nid,name\n"
    assert header_prefix(b"\xef\xbb\xbfid\n1\n", CsvOptions()) == b"\xef\xbb\xbfid\n"
    assert header_prefix(b"id,na", CsvOptions()) is None


CSV = (b"\xef\xbb\xbfid,name,score\r\n\r\n1,a,1.5\n2,\"b, c\",2\n3,\"x\ny\",3\nbad,z,1\n4,d\n5,\"q\"\"q\",5\n"
       + b"".join(b"%d,n%d,%d.25\n" % (i, i, i) for i in range(6, 60)))
JSON = (b'{"id":1,"name":"a","score":1.5}\n\n{"id":"x","name":"b"}\r\n{"id":3,"name":{"n":1}}\n{bad\n'
        + b"".join(b'{"id":%d,"name":"n%d","score":%d.5}\n' % (i, i, i) for i in range(4, 60)))
FIELDS = [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("score", pa.float64())]


@pytest.mark.parametrize("fmt,data,opts,mode", [
    ("csv", CSV, {"header": True}, "PERMISSIVE"), ("csv", CSV, {"header": True}, "DROPMALFORMED"),
    ("csv", CSV[3:], {}, "PERMISSIVE"), ("json", JSON, {}, "PERMISSIVE"), ("json", JSON, {}, "DROPMALFORMED"),
    ("csv", b"\n#x\n \nid,name\n" + CSV[30:], {"header": True, "comment": "#"}, "PERMISSIVE"),
    ("text", CSV, {}, "PERMISSIVE")],
    ids=["csv", "csv-drop", "csv-nohead", "json", "json-drop", "csv-head-late", "text"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_rows_in_blocks_and_pieces_are_the_rows_of_the_whole_file(fmt, data, opts, mode, gz, tmp_path):
    fields = [pa.field("value", pa.string())] if fmt == "text" else FIELDS
    fo = FormatOptions(fmt, opts, mode, "_rescued" if fmt != "text" and mode == "PERMISSIVE" else None)
    reader = reader_of(fmt)
    path = tmp_path / ("f.gz" if gz else "f")
    path.write_bytes(gzip.compress(data) if gz else data)
    f = local(path)
    whole = reader.read(pa.py_buffer(data), fields, fo, f)
    ranges = [(0, None)] if gz else split_ranges(len(data), 37)
    parts = [r for s, n in ranges for r in stream_rows(Filesystems(None), Piece(f, s, n), reader, fields, fo, 16)]
    assert len(parts) > 3
    assert pa.concat_tables([p.table for p in parts]).to_pylist() == whole.table.to_pylist()
    assert sum(p.malformed for p in parts) == whole.malformed
    assert sum(p.dropped for p in parts) == whole.dropped


def test_a_bad_piece_sets_its_file_aside_once_and_the_good_piece_keeps_its_rows(tmp_path, monkeypatch):
    """FAILFAST finds a malformed row in the second piece only: the first piece's rows are ingested, the
    file is quarantined once (one record), and the record names the bad piece's byte range."""
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 16)
    data = b"".join(b"%d,n%d\n" % (i, i) for i in range(40)) + b"oops,x\n"
    path = tmp_path / "data" / "f.csv"
    path.parent.mkdir()
    path.write_bytes(data)
    f = local(path).numbered(7)
    quarantine = tmp_path / "quarantine"
    spec = ReadSpec(FormatOptions("csv", {}, "FAILFAST"), quarantine_location=str(quarantine))
    schema = pa.schema(FIELDS[:2])
    half = len(data) // 2
    first = pa.Table.from_batches(list(read_partition([Piece(f, 0, half)], spec, schema, 3)), schema)
    second = pa.Table.from_batches(list(read_partition([Piece(f, half, len(data) - half)], spec, schema, 3)),
                                   schema)
    ids = first.column("id").to_pylist() + second.column("id").to_pylist()
    assert first.num_rows > 10 and 0 < second.num_rows and ids == list(range(len(ids))) and len(ids) <= 40
    records = list((quarantine / "batches").rglob("*.json"))
    assert len(records) == 1
    rec = json.loads(records[0].read_text())
    assert rec["status"] == "quarantined" and f"in bytes {half} to the end" in rec["error"]
    assert f"the {second.num_rows} rows read before it were kept" in rec["error"]
    # A piece with only malformed rows to report does not replace the record that sets the file aside.
    lenient = ReadSpec(FormatOptions("csv", {}, "PERMISSIVE"), quarantine_location=str(quarantine))
    list(read_partition([Piece(f, half, len(data) - half)], lenient, schema, 3))
    assert json.loads(records[0].read_text())["status"] == "quarantined"


def test_metadata_reports_the_piece_s_block(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"".join(b"%d\n" % i for i in range(100)))
    f = local(path)
    meta = pa.struct([("file_block_start", pa.int64()), ("file_block_length", pa.int64())])
    schema = pa.schema([("id", pa.int64()), ("_metadata", meta)])
    spec = ReadSpec(FormatOptions("csv", {}))
    got = []
    for s, n in split_ranges(f.size, 100):
        got += pa.Table.from_batches(list(read_partition([Piece(f, s, n)], spec, schema, 1)), schema).to_pylist()
    assert [r["id"] for r in got] == list(range(100))
    assert {(r["_metadata"]["file_block_start"], r["_metadata"]["file_block_length"]) for r in got} == \
        {(s, n) for s, n in split_ranges(f.size, 100)}


@pytest.mark.parametrize("fmt,line,fields", [
    ("csv", b"0x10,5", [pa.field("i", pa.int32()), pa.field("l", pa.int64())]),
    ("csv", b"2020-01-15T10:20Z", [pa.field("t", pa.timestamp("us", tz="UTC"))]),
    ("csv", b"2020-01-15T10Z", [pa.field("t", pa.timestamp("us", tz="UTC"))]),
    ("json", b'{"a": 11}{"a": 12}', [pa.field("a", pa.int64())]),
    ("json", b'{"a": 11} {"a": 12}', [pa.field("a", pa.int64())])])
def test_a_row_reads_the_same_whatever_the_other_rows_of_its_block(fmt, line, fields):
    """Spark converts each line on its own, so a block (or a file) of a line alone must give the rows the
    same line gives beside another that sends the block the exact way (Arrow's fast path once read
    hexadecimal integers, zones after minutes and two JSON documents on one line unlike Spark)."""
    reader, fo = reader_of(fmt), FormatOptions(fmt, {})
    other = b"not json" if fmt == "json" else b"x," * (len(fields) - 1) + b"x"
    alone = reader.read(pa.py_buffer(line + b"\n"), fields, fo).table.to_pylist()
    beside = reader.read(pa.py_buffer(line + b"\n" + other + b"\n"), fields, fo).table.to_pylist()
    assert alone == beside[:len(alone)] and len(beside) == len(alone) + 1


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
@pytest.mark.parametrize("rescued", [None, "_rescued"])
def test_big_parquet_and_orc_files_are_read_a_row_group_or_stripe_at_a_time(fmt, rescued, tmp_path, monkeypatch):
    import pyarrow.orc as orc
    import pyarrow.parquet as pq
    n = 30_000
    table = pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{i}" for i in range(n)],
                      "extra": pa.array([i % 7 for i in range(n)], pa.int32())})
    path = tmp_path / f"f.{fmt}"
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=7_000)
    else:
        orc.write_table(table, path, stripe_size=64 << 10)
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string())]
    fo = FormatOptions(fmt, {}, "PERMISSIVE", rescued)
    reader = reader_of(fmt)
    parts = list(reader.read_parts(str(path), fields, fo, local(path)))
    assert len(parts) > 1 and all(p.unknown == ("extra",) for p in parts)
    whole = reader.read(str(path), fields, fo, local(path))
    assert pa.concat_tables([p.table for p in parts]).equals(whole.table)
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 0)  # through the task's reader: streamed, same rows
    schema = pa.schema(fields)
    got = pa.Table.from_batches(list(read_partition([local(path)], ReadSpec(FormatOptions(fmt, {})), schema, 1)))
    assert got.column("id").to_pylist() == list(range(n))


def write_avro(path, n: int) -> None:
    import fastavro
    schema = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "name", "type": "string"},
                                                        {"name": "extra", "type": "int"}]}
    records = ({"id": i, "name": f"n{i}", "extra": i % 7} for i in range(n))
    with open(path, "wb") as out:  # small blocks (sync_interval), so the file has many
        fastavro.writer(out, fastavro.parse_schema(schema), records, codec="deflate", sync_interval=16 << 10)


@pytest.mark.parametrize("rescued", [None, "_rescued"])
def test_big_avro_files_are_read_a_few_blocks_at_a_time(rescued, tmp_path, monkeypatch):
    n = 30_000
    path = tmp_path / "f.avro"
    write_avro(path, n)
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string())]
    fo = FormatOptions("avro", {}, "PERMISSIVE", rescued)
    reader = reader_of("avro")
    monkeypatch.setattr(avro.reader, "PART_BYTES", 64 << 10)
    with open(path, "rb") as fh:
        parts = list(reader.read_parts(fh, fields, fo, local(path)))
    assert len(parts) > 4 and all(p.unknown == ("extra",) for p in parts)
    whole = reader.read(pa.py_buffer(path.read_bytes()), fields, fo, local(path))
    assert pa.concat_tables([p.table for p in parts]).equals(whole.table)
    # Through the task's reader: streamed above BIG_COMPRESSED_BYTES (Avro is compressed inside), same rows.
    assert [blocks.read_in_blocks("avro", typed("avro", {}), "f.avro", size) for size in (4 << 20, 5 << 20)] == [False, True]
    monkeypatch.setattr(blocks, "BIG_COMPRESSED_BYTES", 0)
    monkeypatch.setattr(avro, "read", lambda *a, **k: pytest.fail("a big Avro file was read whole"))
    schema = pa.schema(fields)
    got = pa.Table.from_batches(list(read_partition([local(path)], ReadSpec(FormatOptions("avro", {})), schema, 1)))
    assert got.column("id").to_pylist() == list(range(n))


@pytest.mark.parametrize("piece_bytes", [40_000, 123_457, 1 << 20])
def test_pieces_of_an_avro_file_read_every_block_once_by_its_sync_marker(piece_bytes, tmp_path, monkeypatch):
    monkeypatch.setattr(avro_pieces, "_SCAN_BYTES", 7)  # a marker is found across the reads of the scan too
    n = 30_000
    path = tmp_path / "f.avro"
    write_avro(path, n)  # blocks of about 16 KB
    size = path.stat().st_size
    assert blocks.splittable("avro", typed("avro", {}), "f.avro")
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string())]
    fo = FormatOptions("avro", {}, "PERMISSIVE", None)
    ids = []
    with pa.OSFile(str(path)) as fh:  # as a task opens it: a pyarrow file
        for start, length in split_ranges(size, piece_bytes):
            piece = Piece(local(path), start, length)
            for part in avro.read_parts(fh, fields, fo, piece.file, piece.start, piece.end):
                assert part.table.column_names == ["id", "name"]
                ids += part.table.column("id").to_pylist()
    assert ids == list(range(n))
    # Through the task's reader, as the planner hands it the pieces: the same rows, each piece's own.
    spec = ReadSpec(FormatOptions("avro", {}))
    pieces = [Piece(local(path), s, ln) for s, ln in split_ranges(size, piece_bytes)]
    got = [pa.Table.from_batches(list(read_partition([p], spec, pa.schema(fields), 1))) for p in pieces]
    assert [i for t in got if t.num_rows for i in t.column("id").to_pylist()] == list(range(n))


def test_a_big_avro_file_that_breaks_off_is_malformed_but_a_failed_read_is_the_storage_s(tmp_path):
    path = tmp_path / "f.avro"
    write_avro(path, 5_000)
    data = path.read_bytes()
    fields = [pa.field("id", pa.int64())]
    fo = FormatOptions("avro", {}, "PERMISSIVE", None)
    with pytest.raises(MalformedFile, match="could not decode the Avro file"):
        list(avro.read_parts(io.BytesIO(data[:len(data) * 2 // 3]), fields, fo))
    with pytest.raises(MalformedFile, match="not an Avro file"):
        list(avro.read_parts(io.BytesIO(b"PAR1 not avro"), fields, fo))

    class Dropped(io.BytesIO):
        def read(self, n=-1):
            if self.tell() > len(data) // 2:
                raise OSError("connection reset")
            return super().read(n)
    with pytest.raises(OSError, match="connection reset"):
        list(avro.read_parts(Dropped(data), fields, fo))
    header_only = tmp_path / "empty.avro"
    write_avro(header_only, 0)
    (part,) = avro.read_parts(io.BytesIO(header_only.read_bytes()), fields, fo)
    assert part.table.num_rows == 0 and part.table.column_names == ["id"]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_transient_fault_mid_file_resumes_where_the_read_was(gz, tmp_path, monkeypatch):
    """The connection drops after some chunks: the file is opened again at the offset reached (a
    compressed one decompressed up to it) and no byte is read twice or lost."""
    from s3sqs.reading import big, filesystems
    monkeypatch.setattr(filesystems, "BACKOFF_SECONDS", 0)
    data = b"".join(b"%06d\n" % i for i in range(5000))
    path = tmp_path / ("f.gz" if gz else "f")
    path.write_bytes(gzip.compress(data) if gz else data)
    opened, original = [], big.RangeStream._open

    class Flaky:
        def __init__(self, stream):
            self.stream, self.reads = stream, 0

        def read(self, n):
            self.reads += 1
            if len(opened) == 1 and self.reads == 3:
                raise OSError("Connection reset by peer")
            return self.stream.read(n)

        def close(self):
            self.stream.close()

    def flaky_open(self):
        opened.append(self.offset)
        return Flaky(original(self))
    monkeypatch.setattr(big.RangeStream, "_open", flaky_open)
    got = b"".join(raw_blocks(pafs.LocalFileSystem(), Piece(local(path)), {}, 1000))
    assert got == data and len(opened) == 2 and opened[1] == 2000
