"""Reading a file sink's log as Spark does (devtools/committed.py), on a log written here by hand."""
import json
import os

from devtools.committed import committed_files, first_listings


def _entry(meta, name, records, mtime):
    path = meta / name
    path.write_text("v1\n" + "".join(json.dumps(r) + "\n" for r in records))
    os.utime(path, (mtime, mtime))


def test_a_file_belongs_to_the_first_entry_that_lists_it_and_a_delete_ends_it(tmp_path):
    meta = tmp_path / "_spark_metadata"
    meta.mkdir()
    add = lambda n: {"path": f"file://{tmp_path}/part-{n}.parquet", "action": "add"}  # noqa: E731
    _entry(meta, "0", [add(0)], 100)
    _entry(meta, "1", [add(1)], 200)
    _entry(meta, "2.compact", [add(0), add(1), add(2)], 300)  # lists the earlier batches' files again
    _entry(meta, "3", [{**add(1), "action": "delete"}], 400)
    (meta / ".3.tmp").write_text("v1\n")  # an entry being written: not read
    assert first_listings(tmp_path) == {tmp_path / "part-0.parquet": (0, 100), tmp_path / "part-1.parquet": (1, 200),
                                        tmp_path / "part-2.parquet": (2, 300)}
    assert sorted(committed_files(tmp_path)) == [tmp_path / "part-0.parquet", tmp_path / "part-2.parquet"]
    assert committed_files(tmp_path / "nothing") == [] and first_listings(tmp_path / "nothing") == {}
