"""package-job: what goes into dist/, for which target, and that it is reproducible."""
from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from ops.packaging import PackagingError, build, target
from ops.packaging.cli import main as package_job
from ops.packaging.lock import PINS
from tests.ops.conftest import FAST

pytestmark = pytest.mark.dist

REPO = Path(__file__).resolve().parents[3]
EM_X86_64, EM_AARCH64 = 62, 183


def _elf_machine(data: bytes) -> int:
    assert data[:4] == b"\x7fELF"
    return int.from_bytes(data[18:20], "little")


def _members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_requirements_come_from_pyproject():
    reqs = build.runtime_requirements()
    assert set(reqs) == {"backports-zstd", "boto3", "cramjam", "deltalake", "fastavro", "numpy", "orjson", "polars", "pyarrow",
                         "pyiceberg", "rocksdict"}
    assert all(PINS[name] == version for name, version in reqs.items())


def test_unpinned_or_disagreeing_dependency_is_refused(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["boto3>=1.40"]\n')
    with pytest.raises(PackagingError, match="must be pinned exactly"):
        build.runtime_requirements(pyproject)
    with pytest.raises(PackagingError, match="update the lock"):
        target.resolve_pins({"pyarrow": "21.0.0"})
    with pytest.raises(PackagingError, match="provided by EMR"):
        target.resolve_pins({"pyspark": "4.0.2"})


def test_target_platform_tags_cover_older_manylinux():
    t = target.Target("3.12", "aarch64")
    tags = t.platforms()
    assert tags[0] == "manylinux_2_34_aarch64" and "manylinux_2_28_aarch64" in tags
    assert tags[-1] == "manylinux2014_aarch64" and t.cp == "cp312" and t.emr_architecture == "ARM64"
    with pytest.raises(PackagingError, match="unsupported architecture"):
        target.Target(arch="arm64")


def test_lock_gaps_are_reported(built_dist, local_target):
    wheels = build.find_cached_wheels(build.DEFAULT_WHEEL_CACHE, built_dist.packages, local_target)
    without_six = {k: v for k, v in built_dist.packages.items() if k != "six"}
    with pytest.raises(PackagingError, match="needs six.*does not pin"):
        build.check_closure(wheels, without_six, local_target)


def test_environment_archive_layout(built_dist, local_target):
    archive = built_dist.dist / local_target.env_archive_name
    members = _members(archive)
    py = f"python{local_target.python}"
    site = f"lib/{py}/site-packages"
    # The venv shape EMR's ./environment/bin/python needs.
    assert members["bin/python"].issym() and members["bin/python"].linkname == f"{local_target.python_home}/{py}"
    assert members[f"bin/{py}"].linkname == "python"
    with tarfile.open(archive) as tar:
        cfg = tar.extractfile("pyvenv.cfg").read().decode()
        pth = tar.extractfile(f"{site}/s3sqs-connector.pth").read().decode()
        zipped = tar.extractfile(f"{site}/s3sqs-zipped-pyspark.pth").read().decode()
    assert f"home = {local_target.python_home}" in cfg and "include-system-site-packages = false" in cfg
    assert pth.strip() == "../../../../connector"
    assert zipped == "import s3sqs.core.zipped_pyspark as zipped; zipped.install()\n"
    # site.py reads .pth files in name order: the connector's path first, then the import that needs it.
    assert sorted(n.rsplit("/", 1)[1] for n in members if n.endswith(".pth")) == ["s3sqs-connector.pth",
                                                                                 "s3sqs-zipped-pyspark.pth"]
    tops = {n.split("/")[3] for n in members if n.startswith(site + "/") and n.count("/") >= 3}
    for pkg in ("pyarrow", "rocksdict", "boto3", "botocore", "s3transfer", "dateutil", "urllib3"):
        assert pkg in tops
    # Spark comes from EMR; console scripts and bytecode would carry this machine's paths and times.
    assert not tops & {"pyspark", "py4j", "bin"}
    assert not [n for n in members if "__pycache__" in n or n.endswith(".pyc")]
    assert {m.mtime for m in members.values()} == {build.DEFAULT_EPOCH}
    assert {(m.uid, m.gid) for m in members.values()} == {(0, 0)}
    assert list(members) == sorted(members, key=lambda n: n.split("/"))  # parents before children


def test_connector_zip_and_manifest(built_dist, local_target):
    with zipfile.ZipFile(built_dist.dist / "s3sqs.zip") as zf:
        names = zf.namelist()
    assert "s3sqs/__init__.py" in names and "s3sqs/planning/source.py" in names
    assert not [n for n in names if "__pycache__" in n]
    assert (built_dist.dist / "job.py").read_bytes() == (REPO / "app" / "job.py").read_bytes()
    manifest = build.load_manifest(built_dist.dist)
    assert manifest["environment"] == local_target.env_archive_name
    assert manifest["target"]["emr_architecture"] in ("X86_64", "ARM64")
    assert manifest["packages"] == dict(sorted(PINS.items()))
    assert manifest["transform_modules"] == []
    for name, meta in manifest["artifacts"].items():
        assert build.sha256_of(built_dist.dist / name) == meta["sha256"]


def test_cross_build_for_aarch64_python312(tmp_path):
    """No Docker and no emulator: the aarch64 wheels from the registry are unpacked as they are."""
    # gzip's fastest level: what is checked here is the layout; levels change only the time and size.
    result = build.build(target.Target("3.12", "aarch64"), dist=tmp_path / "dist", compresslevel=FAST)
    archive = result.dist / "s3sqs-env-cp312-aarch64.tar.gz"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        lib = next(n for n in names if n.startswith("lib/python3.12/site-packages/pyarrow/lib.cpython-312-aarch64"))
        rocks = next(n for n in names if n.startswith("lib/python3.12/site-packages/rocksdict/")
                     and n.endswith(".so"))
        assert _elf_machine(tar.extractfile(lib).read(64)) == EM_AARCH64
        assert _elf_machine(tar.extractfile(rocks).read(64)) == EM_AARCH64
        assert tar.getmember("bin/python").linkname == "/usr/bin/python3.12"
    assert json.loads((result.dist / "manifest.json").read_text())["target"]["emr_architecture"] == "ARM64"


def test_cli_rebuild_is_byte_identical_and_prints_sizes(built_dist, tmp_path):
    """A second build, through the CLI, from the same inputs: same bytes; and a table with sizes."""
    out = subprocess.run(
        [str(Path(sys.executable).parent / "package-job"), "--dist", str(tmp_path / "d"),
         "--python-home", built_dist.target.python_home, "--arch", built_dist.target.arch,
         "--python", built_dist.target.python, "--compress-level", str(FAST)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    # The half minute spent writing the environment archive shows its progress.
    progress = [line for line in out.stderr.splitlines() if f"writing {built_dist.target.env_archive_name}:" in line]
    percents = [int(line.split(": ")[1].split("%")[0]) for line in progress]
    assert len(percents) >= 3 and percents == sorted(set(percents)) and percents[-1] == 100  # one big file skips some
    for name in (built_dist.target.env_archive_name, "s3sqs.zip", "job.py", "pyarrow==22.0.0"):
        assert name in out.stdout
    assert "MiB" in out.stdout
    again = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert {n: m["sha256"] for n, m in again["artifacts"].items()} == {a.name: a.sha256 for a in built_dist.artifacts}
    assert (tmp_path / "d" / "manifest.json").read_bytes() == (built_dist.dist / "manifest.json").read_bytes()


def test_missing_dist_and_bad_target_are_explained(tmp_path):
    with pytest.raises(PackagingError, match="run package-job"):
        build.load_manifest(tmp_path / "nothing-here")
    bad = subprocess.run([str(Path(sys.executable).parent / "package-job"), "--arch", "sparc"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "argument --arch: 'sparc' is not a CPU architecture; one of: x86_64, aarch64" \
        in bad.stderr


@pytest.mark.parametrize("level", ["0", "10", "6.5", "fast"])
def test_a_compress_level_outside_1_to_9_is_refused_naming_the_range(level, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        package_job(["--compress-level", level, "--dist", str(tmp_path)])
    assert e.value.code == 2 and f"{level!r} is not a gzip level; give a whole number from 1 (fastest) to 9" \
        in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_progress_reports_each_further_tenth_once():
    lines = []
    p = build.Progress(1000, "writing x", lines.append)
    for n in (50, 50, 5, 300, 595):
        p.add(n)
    assert [line.split(": ")[1].split(" of")[0] for line in lines] == ["10%", "40%", "100%"]
    assert lines[-1].startswith("  writing x: 100% of 1,000 B (")


def test_a_wheel_that_does_not_match_its_record_is_refused(built_dist, tmp_path):  # built_dist fills the cache
    six = next(build.DEFAULT_WHEEL_CACHE.glob("six-1.17.0-*.whl"))
    tampered = tmp_path / six.name
    with zipfile.ZipFile(six) as src, zipfile.ZipFile(tampered, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data + b"\n# changed\n" if info.filename == "six.py" else data)
    with pytest.raises(PackagingError, match="six.py didn't match RECORD; delete .* and build again"):
        build.install_wheel(tampered, tmp_path / "site")
    build.install_wheel(six, tmp_path / "ok")
    assert (tmp_path / "ok" / "six.py").is_file() and (tmp_path / "ok" / "six-1.17.0.dist-info" / "RECORD").is_file()


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_real_wheel_installs_as_its_files_without_scripts(built_dist, tmp_path):  # built_dist fills the cache
    """jmespath ships a script in .data/scripts: site-packages gets every other file of the wheel, byte for
    byte, at its own path (as the hand-written installer did before), and RECORD lists exactly those."""
    wheel = next(build.DEFAULT_WHEEL_CACHE.glob("jmespath-1.1.0-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        wheel_files = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    record = "jmespath-1.1.0.dist-info/RECORD"
    expected = {n: d for n, d in wheel_files.items() if not n.startswith("jmespath-1.1.0.data/") and n != record}
    assert len(expected) == len(wheel_files) - 2  # all but the script (and RECORD, compared below)
    build.install_wheels({"jmespath": wheel}, built_dist.target, tmp_path / "site")
    installed = _files(tmp_path / "site")
    assert {n: d for n, d in installed.items() if n != record} == expected
    lines = installed[record].decode().splitlines()
    assert lines == sorted(lines, key=lambda line: line.split(",")[0])
    assert set(lines) == {_record_line(n, d) for n, d in expected.items()} | {f"{record},,"}


def _wheel(path: Path, files: dict[str, bytes], executable: tuple[str, ...] = ()) -> Path:
    record = "demo_pkg-1.0.dist-info/RECORD"
    lines = [_record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in {**files, record: "\n".join(lines).encode() + b"\n"}.items():
            info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if name in executable else 0o100644) << 16
            zf.writestr(info, data)
    return path


DEMO = {
    "demo_pkg/__init__.py": b"def main():\n    pass\n",
    "demo_pkg/tool.sh": b"#!/bin/sh\n",
    "demo_pkg/legacy.pyc": b"stale",
    "demo_pkg/speedups.pyx": b"cdef int x\n",
    "demo_pkg-1.0.data/purelib/demo_extra.py": b"X = 1\n",
    "demo_pkg-1.0.data/scripts/demo-script": b"#!python\nprint(1)\n",
    "demo_pkg-1.0.data/headers/demo.h": b"int x;\n",
    "demo_pkg-1.0.data/data/share/demo.txt": b"data\n",
    "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
    "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "demo_pkg-1.0.dist-info/entry_points.txt": b"[console_scripts]\ndemo = demo_pkg:main\n",
}


def test_only_site_packages_is_installed_with_no_bytecode_scripts_or_installer_files(tmp_path):
    wheel = _wheel(tmp_path / "demo_pkg-1.0-py3-none-any.whl",
                   {**DEMO, "demo_pkg/__pycache__/__init__.cpython-311.pyc": b"bytecode"}, ("demo_pkg/tool.sh",))
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    with pytest.warns(RuntimeWarning, match="__pycache__"):  # installer skips it
        build.install_wheels({"demo-pkg": wheel}, target.Target(), site)
    installed = _files(tmp_path / "env")
    prefix = "lib/python3.11/site-packages/"
    assert sorted(installed) == [prefix + n for n in (
        "demo_extra.py", "demo_pkg-1.0.dist-info/METADATA", "demo_pkg-1.0.dist-info/RECORD",
        "demo_pkg-1.0.dist-info/WHEEL", "demo_pkg-1.0.dist-info/entry_points.txt", "demo_pkg/__init__.py",
        "demo_pkg/tool.sh")]
    assert installed[prefix + "demo_extra.py"] == DEMO["demo_pkg-1.0.data/purelib/demo_extra.py"]
    assert [p.name for p in site.rglob("*") if p.is_file() and p.stat().st_mode & 0o111] == ["tool.sh"]
    record = installed[prefix + "demo_pkg-1.0.dist-info/RECORD"].decode()
    assert "demo_extra.py," in record and "scripts" not in record and "demo.h" not in record


def test_a_wheel_writing_outside_site_packages_is_refused(tmp_path):
    wheel = _wheel(tmp_path / "demo_pkg-1.0-py3-none-any.whl", {**DEMO, "../escape.py": b"x = 1\n"})
    with pytest.raises(PackagingError, match="demo_pkg-1.0-py3-none-any.whl: .*escape.py outside"):
        build.install_wheel(wheel, tmp_path / "env" / "site")
    assert not (tmp_path / "env" / "escape.py").exists()


def test_transform_modules_travel_at_the_connector_archives_root(tmp_path):
    (tmp_path / "my_transforms.py").write_text("def clean(df):\n    return df\n")
    pkg = tmp_path / "shop_rules"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "orders.py").write_text("def tidy(df):\n    return df\n")
    (pkg / "__pycache__" / "orders.cpython-311.pyc").write_bytes(b"x")
    extra = build.transform_module_files([tmp_path / "my_transforms.py", pkg])
    out = tmp_path / "s3sqs.zip"
    build.write_connector_zip(REPO / "app" / "s3sqs", out, extra)
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
    assert {"my_transforms.py", "shop_rules/__init__.py", "shop_rules/orders.py", "s3sqs/sinks/stream.py"} <= names
    assert not [n for n in names if "__pycache__" in n]


@pytest.mark.parametrize("name, message", [
    ("missing.py", "not a .py file or a package folder"),
    ("notes.txt", "not a .py file or a package folder"),
    ("my-rules.py", "'my-rules' is not a module name"),
])
def test_a_bad_transform_module_is_refused_before_building(tmp_path, name, message):
    path = tmp_path / name
    if name != "missing.py":
        path.write_text("")
    assert_refused_before_building(tmp_path, path, message)


def test_a_transform_package_named_like_the_connector_is_refused_before_building(tmp_path):
    (tmp_path / "s3sqs").mkdir()
    (tmp_path / "s3sqs" / "__init__.py").write_text("")
    assert_refused_before_building(tmp_path, tmp_path / "s3sqs", "a module named 's3sqs' is already in the archive")


def assert_refused_before_building(tmp_path, module, message: str) -> None:
    with pytest.raises(PackagingError, match=message):
        build.build(target.Target(), dist=tmp_path / "dist", transform_modules=(module,))
    assert not (tmp_path / "dist").exists()
