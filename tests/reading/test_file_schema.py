"""A file's own schema within bounded memory: a big text file's from its first block of whole rows (and
further blocks only for the columns a proposal must type), a big Avro file's from its header alone."""
import gzip
import json

import pyarrow as pa
import pytest

from s3sqs.config.format_options import defaults
from s3sqs.reading import blocks, file_schema
from s3sqs.reading.file_schema import infer_file
from s3sqs.reading.filesystems import Filesystems
from s3sqs.reading.formats import FormatOptions, csv, json as json_format
from s3sqs.reading.reader import ReadSpec
from tests.reading.test_big_files import local, write_avro


@pytest.fixture
def small_sample(monkeypatch):
    """Files over 1 KiB are big; their sample is a block of about 4 KiB."""
    monkeypatch.setattr(blocks, "BIG_FILE_BYTES", 1 << 10)
    monkeypatch.setattr(blocks, "BIG_COMPRESSED_BYTES", 1 << 10)
    monkeypatch.setattr(file_schema, "SAMPLE_BYTES", 4 << 10)


def spying(monkeypatch, module) -> list[int]:
    sizes, infer = [], module.infer
    monkeypatch.setattr(module, "infer", lambda data, *a, **k: sizes.append(data.size) or infer(data, *a, **k))
    return sizes


def spec(fmt: str, **opts) -> ReadSpec:
    return ReadSpec(FormatOptions(fmt, {**defaults(fmt), **opts}))


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("multi_line", [False, True], ids=["lines", "multiLine"])
def test_a_big_csv_file_s_schema_comes_from_its_first_block(gz, multi_line, small_sample, tmp_path, monkeypatch):
    text = "id,name,score\n" + "".join(f'{i},"n\n{i}",{i}.5\n' if multi_line else f"{i},n{i},{i}.5\n"
                                       for i in range(5000))
    path = tmp_path / ("f.csv.gz" if gz else "f.csv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    s = spec("csv", header=True, multiLine=multi_line)
    whole = csv.infer(pa.py_buffer(text.encode()), s.format, True)
    sizes = spying(monkeypatch, csv)
    got = infer_file(Filesystems(None), local(path), s, True)
    assert got == whole and whole.names == ["id", "name", "score"]
    assert len(sizes) == 1 and 3 << 10 <= sizes[0] < 9 << 10 < len(text)  # one block, not the file


def test_a_proposal_reads_on_until_it_has_typed_the_new_columns(small_sample, tmp_path, monkeypatch):
    rows = [{"a": i, "b": f"x{i}"} for i in range(400)] + [{"a": 1, "late": 2.5}] + \
           [{"a": i, "b": "y"} for i in range(400)]
    path = tmp_path / "f.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = spec("json")
    sizes = spying(monkeypatch, json_format)
    assert infer_file(Filesystems(None), local(path), s, True).names == ["a", "b"]
    assert len(sizes) == 1
    sizes.clear()
    got = infer_file(Filesystems(None), local(path), s, True, ("late",))
    assert got.names == ["a", "b", "late"] and got.field("late").type == pa.float64()
    assert 1 < len(sizes) and sum(sizes) < path.stat().st_size  # read on to the column, not to the end
    sizes.clear()
    assert infer_file(Filesystems(None), local(path), s, True, ("never",)).names == ["a", "b"]
    assert sum(sizes) == path.stat().st_size  # a column the file lacks: every block looked at, none added


def test_a_big_avro_file_s_schema_comes_from_its_header(small_sample, tmp_path, monkeypatch):
    from s3sqs.reading.formats import avro
    path = tmp_path / "f.avro"
    write_avro(path, 20_000)
    whole = avro.infer(pa.py_buffer(path.read_bytes()), spec("avro").format)
    monkeypatch.setattr(file_schema, "fetch", lambda *a: pytest.fail("the whole file was fetched"))
    assert infer_file(Filesystems(None), local(path), spec("avro"), True) == whole and len(whole) > 1


def test_a_small_file_is_still_read_whole(small_sample, tmp_path, monkeypatch):
    path = tmp_path / "f.csv"
    path.write_bytes(b"id,name\n1,a\n")
    sizes = spying(monkeypatch, csv)
    assert infer_file(Filesystems(None), local(path), spec("csv", header=True), False).names == ["id", "name"]
    assert sizes == [path.stat().st_size]


def test_a_text_file_s_schema_is_the_format_s_without_a_read(small_sample, tmp_path, monkeypatch):
    from s3sqs.reading.formats import text
    path = tmp_path / "f.txt"
    path.write_bytes(b"a line\n" * 1000)
    monkeypatch.setattr(file_schema, "fetch", lambda *a: pytest.fail("the file was fetched"))
    monkeypatch.setattr(file_schema, "text_blocks", lambda *a: pytest.fail("the file was read"))
    assert infer_file(Filesystems(None), local(path), spec("text"), False) == text.SCHEMA
