"""Spark's zipped pyspark, unpacked once into a private folder whose modules keep their bytecode
(s3sqs/core/zipped_pyspark.py). Each import runs in a fresh interpreter, as Spark starts its Python
processes: with the zip on PYTHONPATH and bytecode writing turned off, as make sets it."""
from __future__ import annotations

import marshal
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from s3sqs.core import zipped_pyspark as zp

APP = Path(__file__).resolve().parents[2] / "app"


def make_zip(path: Path, value: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("probe/__init__.py", f"VALUE = {value}\n")
        z.writestr("probe/sub.py", "from . import VALUE as PARENT\n")
        z.writestr("probe/data.json", '{"kind": "resource"}')
    return path


def python(tmp_path: Path, zip_path: Path, code: str, **env) -> list[str]:
    """Run `code` in a new interpreter with `zip_path` first on its path, as Spark sets PYTHONPATH, after
    `install()` (what the .pth does; -S: without site-packages, so without the environment's own .pth)."""
    full = {k: v for k, v in os.environ.items() if k != zp.ENV_OFF}
    full.update({"PYTHONPATH": f"{zip_path}{os.pathsep}{APP}", "PYTHONDONTWRITEBYTECODE": "1",
                 "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp"), **env})
    script = f"from s3sqs.core import zipped_pyspark as z; z.install()\n{code}"
    r = subprocess.run([sys.executable, "-S", "-c", script], env=full, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines() + [f"stderr: {line}" for line in r.stderr.splitlines()]


IMPORT = ("import importlib.resources, probe, probe.sub; print(probe.__file__); print(probe.VALUE, probe.sub.PARENT); "
          "print(importlib.resources.files('probe').joinpath('data.json').read_text())")


def roots(tmp_path: Path) -> tuple[Path, Path]:
    """The user's cache and the temporary directory's fallback, as python() sets them."""
    return tmp_path / "cache" / "s3sqs" / "zipped-pyspark", tmp_path / "tmp" / f"s3sqs-zipped-pyspark-{os.getuid()}"


def test_a_spark_zip_is_imported_from_an_unpacked_folder_with_bytecode(tmp_path):
    zip_path = make_zip(tmp_path / "spark" / "python" / "lib" / "pyspark.zip")
    first = python(tmp_path, zip_path, IMPORT)
    folder = Path(first[0]).parents[1]
    assert folder.parent == roots(tmp_path)[0] and first[1:] == ["1 1", '{"kind": "resource"}']
    assert folder.parent.stat().st_mode & 0o777 == 0o700
    pyc = sorted((folder / "probe" / "__pycache__").glob("*.pyc"))
    assert [p.name.split(".")[0] for p in pyc] == ["__init__", "sub"]  # written though PYTHONDONTWRITEBYTECODE=1

    # The next interpreter loads that bytecode: swap in code that says 2 under the same header, and it runs.
    init_pyc = pyc[0]
    data = init_pyc.read_bytes()
    init_pyc.write_bytes(data[:16] + marshal.dumps(compile("VALUE = 2\n", str(folder / "probe/__init__.py"), "exec")))
    assert python(tmp_path, zip_path, IMPORT)[1] == "2 2"

    # A source newer than its bytecode is compiled again.
    src = folder / "probe" / "__init__.py"
    src.write_text("VALUE = 3\n")
    os.utime(src, (src.stat().st_atime, src.stat().st_mtime + 10))
    assert python(tmp_path, zip_path, IMPORT)[1] == "3 3"


def test_a_new_zip_gets_a_new_folder_and_other_zips_stay(tmp_path):
    zip_path = make_zip(tmp_path / "lib" / "pyspark.zip")
    first = python(tmp_path, zip_path, IMPORT)[0]
    make_zip(zip_path, value=10)  # another Spark version at the same place: another size
    os.utime(zip_path, (1, 2))
    second = python(tmp_path, zip_path, IMPORT)
    assert second[1] == "10 10" and Path(second[0]).parents[1] != Path(first).parents[1]
    other = make_zip(tmp_path / "elsewhere" / "probe-lib.zip")
    assert python(tmp_path, other, IMPORT)[0] == str(other / "probe" / "__init__.py")


def test_which_zips_are_sparks():
    assert zp.is_spark_zip("/opt/spark/python/lib/py4j-0.10.9.9-src.zip")
    assert zp.is_spark_zip("/opt/spark/python/lib/pyspark.zip")
    assert not zp.is_spark_zip("/opt/spark/python/lib/py4j-0.10.9.9.jar")
    assert not zp.is_spark_zip("/home/me/deps.zip")


def test_a_root_others_can_write_is_refused_and_the_zip_still_works(tmp_path):
    zip_path = make_zip(tmp_path / "lib" / "pyspark.zip")
    home, tmp = roots(tmp_path)
    home.mkdir(parents=True)
    os.chmod(home, 0o777)
    out = python(tmp_path, zip_path, IMPORT)  # the temporary directory's root instead
    assert Path(out[0]).parents[2] == tmp and out[1] == "1 1" and not [ln for ln in out if ln.startswith("stderr")]
    os.chmod(tmp, 0o777)
    out = python(tmp_path, zip_path, IMPORT)
    assert out[0] == str(zip_path / "probe" / "__init__.py") and out[1] == "1 1"
    warning = [line for line in out if line.startswith("stderr: ")]
    assert len(warning) == 1 and warning[0].count("not private to this user") == 2 and zp.ENV_OFF in warning[0]
    assert list(home.iterdir()) == []


def test_a_failed_unpack_leaves_no_partial_copy_and_says_why(tmp_path):
    zip_path = tmp_path / "lib" / "pyspark.zip"
    zip_path.parent.mkdir()
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("probe/__init__.py", "VALUE = 1\n")
    data = zip_path.read_bytes()
    zip_path.write_bytes(data.replace(b"VALUE = 1", b"VALUE = 7"))  # the member no longer matches its CRC
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(zipfile.BadZipFile):
        zp.unpack(str(zip_path), str(root))
    assert list(root.iterdir()) == []
    out = python(tmp_path, zip_path, "print('started')")  # the interpreter still starts, and says why
    assert out[0] == "started" and "Bad CRC-32" in out[1] and out[1].startswith("stderr: s3sqs: importing pyspark")


def test_it_can_be_turned_off(tmp_path):
    zip_path = make_zip(tmp_path / "lib" / "pyspark.zip")
    out = python(tmp_path, zip_path, IMPORT, **{zp.ENV_OFF: "off"})
    assert out[0] == str(zip_path / "probe" / "__init__.py")
    assert not any(root.exists() for root in roots(tmp_path))


def test_two_processes_unpacking_at_once_share_the_winners_folder(tmp_path, monkeypatch):
    zip_path = make_zip(tmp_path / "lib" / "pyspark.zip")
    root = tmp_path / "root"
    root.mkdir()
    real_rename = os.rename

    def rival_first(src, dst):  # another process renames its whole copy into place just before us
        other = Path(str(dst) + ".rival")
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(other)
        real_rename(other, dst)
        return real_rename(src, dst)

    monkeypatch.setattr(zp.os, "rename", rival_first)
    folder = zp.unpack(str(zip_path), str(root))
    assert sorted(p.name for p in root.iterdir()) == [Path(folder).name]  # no partial copy left behind
    assert (Path(folder) / "probe" / "__init__.py").read_text() == "VALUE = 1\n"


def test_the_pth_line_runs_install(tmp_path):
    pth = zp.write_pth(str(tmp_path))
    assert Path(pth).name == zp.PTH_NAME and Path(pth).read_text() == zp.PTH_LINE
    assert zp.PTH_LINE.startswith("import ")  # site.py executes only lines that start so


def test_the_folder_name_tells_zips_apart_by_place_and_version():
    names = {zp.unpacked_name(p, size, mtime) for p in ("/a/pyspark.zip", "/b/pyspark.zip")
             for size, mtime in ((10, 5), (11, 5), (10, 6))}
    assert len(names) == 6 and all(n.startswith("pyspark-") for n in names)
