"""Builds what an EMR Serverless job run needs into dist/, without Docker: the wheels, the archives, the manifest.

Three artifacts, plus a manifest that `submit-job` reads:

- `job.py`: the entry point (a copy of app/job.py).
- `s3sqs.zip`: the connector package, and at its root the modules of the job's --transform
  (`--transform-module`). It travels as `spark.archives=…#connector`, not `--py-files`:
  Spark's streaming-source runner (the Python process that plans every micro-batch) does not see
  `--py-files`, so the package must be importable by the interpreter itself. The environment below
  carries a `.pth` file that points at `./connector`, the archive's sibling in the container's
  working directory, so driver, planner and executor processes all import the same copy. A second
  `.pth` gives EMR's zipped pyspark bytecode (s3sqs/core/zipped_pyspark.py).
- `s3sqs-env-cpXY-ARCH.tar.gz`: the Python dependencies, laid out as a virtual environment for
  `spark.archives=…#environment` and `PYSPARK_PYTHON=./environment/bin/python`.

How the environment resolves on EMR. A venv-pack'ed venv is a venv whose `bin/python` is a symlink to
the interpreter it was created from, plus `pyvenv.cfg` naming that interpreter's directory (`home`).
Python finds `pyvenv.cfg` next to the *unresolved* executable path, takes its prefix from there and its
standard library from `home`, so the symlink only has to point at an interpreter of the same minor
version that exists on the EMR image. AWS's recipe builds inside an Amazon Linux container so that the
link reads /usr/bin/python3.11. We write the same layout directly: `bin/python -> /usr/bin/python3.X`,
`pyvenv.cfg` with `home = /usr/bin`, and `lib/python3.X/site-packages` holding the manylinux wheels
for the target CPython and CPU (`pip download --platform … --only-binary=:all:`), installed here with
pypa's `installer` (site-packages only: no scripts, headers, data files or bytecode).
Amazon Linux's Python uses `lib64` as platlibdir, but `site` also adds `lib/…/site-packages`, as it
does for venvs created there. No Docker, no cross compiler: only binary wheels from the registry.

Reproducible: versions come from pyproject.toml and ops/packaging/lock.py, entries are sorted, owners,
permissions and timestamps are fixed, and gzip carries no name or time, so two builds from the same
inputs (the wheels and the pinned `installer`) are byte-identical, whatever pip version downloaded the wheels.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InstallerError
from installer.records import RecordEntry
from installer.sources import WheelFile
from s3sqs.core import zipped_pyspark
from s3sqs.core.units import human_bytes

from ops.cli import command
from ops.packaging import PackagingError
from ops.packaging.target import (
    CONNECTOR_ARCHIVE_ALIAS, CONNECTOR_NAME, CONNECTOR_PACKAGE, ENTRY_POINT_NAME, ENV_ARCHIVE_ALIAS, MANIFEST_NAME,
    Target, canonical, closure_problems, packaging_library, pinned_requirements, pip_platform_args, resolve_pins,
    wheel_supported,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIST = REPO_ROOT / "dist"
# build/ is gitignored; wheels are cached per target so a rebuild needs no network.
DEFAULT_WHEEL_CACHE = REPO_ROOT / "build" / "wheel-cache"
# gzip level of the environment archive: a build at 6 takes 45 s here for 201 MiB, at 1 25 s for 225 MiB.
DEFAULT_COMPRESS_LEVEL = 6
# Fixed timestamp for every archive entry (2020-01-01); SOURCE_DATE_EPOCH overrides it.
DEFAULT_EPOCH = 1577836800
# Build-time only: C headers, Cython sources and the test suite. Nothing imports them at run time.
PRUNE_DIRS = ("pyarrow/include", "pyarrow/src", "pyarrow/tests")
PRUNE_SUFFIXES = (".pyx", ".pxd", ".pxi")


@dataclass
class Artifact:
    name: str
    path: Path
    size: int
    sha256: str
    unpacked_size: int | None = None
    note: str = ""


@dataclass
class BuildResult:
    dist: Path
    target: Target
    artifacts: list[Artifact]
    packages: dict[str, str]
    package_sizes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    transform_modules: tuple[str, ...] = ()

    def artifact(self, name: str) -> Artifact:
        return next(a for a in self.artifacts if a.name == name)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> dict[str, str]:
    """The connector's [project] dependencies, each of which must be pinned with ==."""
    data = tomllib.loads(pyproject.read_text())
    return pinned_requirements(data.get("project", {}).get("dependencies", []), pyproject.name)


def check_closure(wheels: dict[str, Path], pins: dict[str, str], target: Target) -> None:
    """Every requirement of every wheel (for this target) is pinned and satisfied, or runtime-provided."""
    requires = {}
    for name, wheel in wheels.items():
        with zipfile.ZipFile(wheel) as zf:
            meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            meta = zf.read(meta_name).decode("utf-8", "replace")
        requires[name] = [line.split(":", 1)[1].strip() for line in meta.splitlines()
                          if line.startswith("Requires-Dist:")]
    problems = closure_problems(requires, pins, target)
    if problems:
        raise PackagingError("the pinned dependency set is inconsistent:\n  " + "\n  ".join(problems))


def find_cached_wheels(cache: Path, pins: dict[str, str], target: Target) -> dict[str, Path]:
    """The cached wheel of each pinned version that fits the target."""
    parse_wheel_filename = packaging_library().utils.parse_wheel_filename

    found = {}
    if cache.is_dir():
        for whl in sorted(cache.glob("*.whl")):
            name, version, _, _ = parse_wheel_filename(whl.name)
            name = canonical(name)
            if pins.get(name) == str(version) and wheel_supported(whl.name, target) and name not in found:
                found[name] = whl
    return found


def fetch_wheels(pins: dict[str, str], target: Target, cache: Path) -> dict[str, Path]:
    """Binary wheels for the target, from the cache or else the registry (pip download, no deps)."""
    cache.mkdir(parents=True, exist_ok=True)
    have = find_cached_wheels(cache, pins, target)
    missing = [n for n in pins if n not in have]
    if missing:
        log(f"downloading {len(missing)} wheel(s) for {target.tag}: {', '.join(missing)}")
        t0 = time.monotonic()
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(cache),
               *pip_platform_args(target), *[f"{n}=={pins[n]}" for n in missing]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise PackagingError(
                f"pip could not download binary wheels for {target.tag} (glibc {target.glibc}):\n"
                + (proc.stderr.strip() or proc.stdout.strip())
            )
        have = find_cached_wheels(cache, pins, target)
        log(f"downloaded in {time.monotonic() - t0:.1f} s to {_rel(cache)}")
    else:
        log(f"all {len(pins)} wheels for {target.tag} found in {_rel(cache)}")
    still = [n for n in pins if n not in have]
    if still:
        raise PackagingError(f"no binary wheel for {target.tag} of: {', '.join(still)}")
    return have


_SITE_SCHEMES = ("purelib", "platlib")


class _SitePackages(SchemeDictionaryDestination):
    """installer's destination, limited to site-packages: purelib and platlib are written there;
    scripts (console entry points and `.data/scripts`), headers and data files are dropped, as their
    paths and shebangs would name this machine and nothing on EMR runs them."""

    def write_script(self, name, module, attr, section) -> RecordEntry:
        return RecordEntry(name, None, None)

    def write_file(self, scheme, path, stream, is_executable) -> RecordEntry:
        if scheme not in _SITE_SCHEMES:
            return RecordEntry(str(path), None, None)
        return super().write_file(scheme, path, stream, is_executable)

    def finalize_installation(self, scheme, record_file_path, records) -> None:
        # RECORD lists what was written, all relative to site-packages (both schemes are that one directory).
        kept = [(scheme, record) for file_scheme, record in records if file_scheme in _SITE_SCHEMES]
        super().finalize_installation(scheme, record_file_path, kept)


def install_wheel(wheel: Path, site_packages: Path) -> None:
    """Install one wheel into site-packages with pypa's `installer`, after checking every file against
    the wheel's RECORD.

    Not `pip install --target`, so the result depends on the wheels (and the pinned installer) alone,
    not on pip's version. No INSTALLER or REQUESTED file and no bytecode; RECORD is rewritten to list
    the files installed.
    """
    site = str(site_packages.resolve())
    destination = _SitePackages(
        {scheme: site for scheme in ("purelib", "platlib", "scripts", "headers", "data")},
        interpreter="python", script_kind="posix",  # unused: no scripts are written
    )
    try:
        with WheelFile.open(wheel) as source:
            source.validate_record()
            install(source, destination, additional_metadata={})
    except WheelFile.validation_error as e:
        issues = "; ".join(issue.replace(f"In {wheel}, ", "") for issue in e.issues)
        raise PackagingError(f"{wheel.name}: {issues}; delete {wheel} and build again") from e
    except (InstallerError, ValueError, FileExistsError) as e:  # bad layout, a path outside site-packages, a clash
        raise PackagingError(f"{wheel.name}: {e}") from e


def install_wheels(wheels: dict[str, Path], target: Target, site_packages: Path) -> None:
    site_packages.mkdir(parents=True, exist_ok=True)
    log(f"installing {len(wheels)} wheels into the environment")
    for _, wheel in sorted(wheels.items()):
        install_wheel(wheel, site_packages)
    # No bytecode (installer skips __pycache__; a wheel may still ship a loose .pyc): .pyc files hold
    # build-time data, and Python writes its own on EMR.
    for rel in PRUNE_DIRS:
        shutil.rmtree(site_packages / rel, ignore_errors=True)
    for p in sorted(site_packages.rglob("*")):
        if p.is_file() and (p.suffix in PRUNE_SUFFIXES or p.suffix == ".pyc"):
            p.unlink()


def lay_out_environment(root: Path, target: Target) -> Path:
    """The venv skeleton around site-packages; returns the site-packages directory."""
    site = root / "lib" / f"python{target.python}" / "site-packages"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    site.mkdir(parents=True, exist_ok=True)
    os.symlink(f"{target.python_home.rstrip('/')}/python{target.python}", root / "bin" / "python")
    os.symlink("python", root / "bin" / "python3")
    os.symlink("python", root / "bin" / f"python{target.python}")
    (root / "pyvenv.cfg").write_text(
        f"home = {target.python_home.rstrip('/')}\ninclude-system-site-packages = false\n"
        f"version = {target.python}\n"
    )
    # site-packages is environment/lib/pythonX.Y/site-packages: four levels up is the working directory
    # where Spark also unpacks the connector archive. site.py joins and normalises this lexically.
    (site / "s3sqs-connector.pth").write_text(f"../../../../{CONNECTOR_ARCHIVE_ALIAS}\n")
    zipped_pyspark.write_pth(str(site))  # EMR's zipped pyspark, with bytecode (s3sqs/core/zipped_pyspark.py)
    return site


def _epoch() -> int:
    return int(os.environ.get("SOURCE_DATE_EPOCH", DEFAULT_EPOCH))


class Progress:
    """Logs each further `step` percent of `total` bytes, so a step that takes half a minute is not silent."""

    def __init__(self, total: int, label: str, log: Callable[[str], None], step: int = 10):
        self.total, self.label, self.log, self.step = max(total, 1), label, log, step
        self.done, self.shown, self.started = 0, 0, time.monotonic()

    def add(self, n: int) -> None:
        self.done += n
        percent = min(100, 100 * self.done // self.total) // self.step * self.step
        if percent > self.shown:
            self.shown = percent
            self.log(f"  {self.label}: {percent}% of {human(self.total)} ({time.monotonic() - self.started:.0f} s)")


def write_tar_gz(src: Path, out: Path, compresslevel: int = DEFAULT_COMPRESS_LEVEL,
                 log: Callable[[str], None] | None = None) -> int:
    """Deterministic tar.gz of src's contents (entries at the archive root); returns unpacked bytes.

    With `log`, reports every 10% of the bytes written (the environment archive takes about 30 s)."""
    mtime = _epoch()
    entries = sorted(p for p in src.rglob("*"))
    total = sum(st.st_size for st in (p.lstat() for p in entries) if stat.S_ISREG(st.st_mode))
    progress = Progress(total, f"writing {out.name}", log) if log else None
    unpacked = 0
    tmp = out.with_name(out.name + ".partial")
    with open(tmp, "wb") as raw:
        # filename="" and mtime=0 keep the gzip header free of the build's name and time.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for p in entries:
                    rel = p.relative_to(src).as_posix()
                    info = tarfile.TarInfo(rel)
                    info.mtime = mtime
                    info.uid = info.gid = 0
                    info.uname = info.gname = "root"
                    st = p.lstat()
                    if stat.S_ISLNK(st.st_mode):
                        info.type = tarfile.SYMTYPE
                        info.linkname = os.readlink(p)
                        info.mode = 0o777
                        tar.addfile(info)
                    elif stat.S_ISDIR(st.st_mode):
                        info.type = tarfile.DIRTYPE
                        info.mode = 0o755
                        tar.addfile(info)
                    else:
                        info.size = st.st_size
                        info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                        unpacked += st.st_size
                        with open(p, "rb") as f:
                            tar.addfile(info, f)
                        if progress:
                            progress.add(st.st_size)
    tmp.replace(out)
    return unpacked


def transform_module_files(paths: tuple[Path, ...] | list[Path]) -> dict[str, Path]:
    """The user's transform modules, as archive name -> file: a module file `name.py` or a package
    folder (with its __init__.py) goes to the connector archive's root, where the job imports it."""
    files: dict[str, Path] = {}
    names: set[str] = set()
    for path in map(Path, paths):
        if path.is_file() and path.suffix == ".py":
            name, members = path.stem, {path.name: path}
        elif path.is_dir() and (path / "__init__.py").is_file():
            name = path.name
            members = {f"{name}/{p.relative_to(path).as_posix()}": p for p in path.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")}
        else:
            raise PackagingError(f"--transform-module {path}: not a .py file or a package folder with __init__.py")
        if not name.isidentifier():
            raise PackagingError(f"--transform-module {path}: {name!r} is not a module name Python can import")
        if name == CONNECTOR_PACKAGE or name in names:
            raise PackagingError(f"--transform-module {path}: a module named {name!r} is already in the archive")
        names.add(name)
        files.update(members)
    return files


def write_connector_zip(package_dir: Path, out: Path, extra: dict[str, Path] | None = None) -> int:
    """Deterministic zip of the connector package (the `s3sqs/` directory at the zip's root), plus any
    `extra` files (archive name -> file), such as the user's transform modules."""
    y, mo, d, h, mi, s = time.gmtime(max(_epoch(), 315532800))[:6]  # zip cannot date before 1980
    files = sorted(
        p for p in package_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )
    if not any(p.name == "__init__.py" and p.parent == package_dir for p in files):
        raise PackagingError(f"{package_dir} is not a Python package (no __init__.py)")
    members = {f"{package_dir.name}/{p.relative_to(package_dir).as_posix()}": p for p in files}
    members.update(extra or {})
    unpacked = 0
    tmp = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name, p in sorted(members.items()):
            info = zipfile.ZipInfo(name, (y, mo, d, h, mi, s))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            data = p.read_bytes()
            unpacked += len(data)
            zf.writestr(info, data)
    tmp.replace(out)
    return unpacked


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _package_sizes(site: Path, packages: dict[str, str]) -> dict[str, int]:
    """Unpacked bytes per installed distribution, from each one's RECORD."""
    sizes = {}
    for dist_info in sorted(site.glob("*.dist-info")):
        name = canonical(dist_info.name[: -len(".dist-info")].rsplit("-", 1)[0])
        total = 0
        record = dist_info / "RECORD"
        if record.exists():
            for line in record.read_text().splitlines():
                rel = line.split(",", 1)[0]
                f = site / rel
                if rel and f.is_file():
                    total += f.stat().st_size
        sizes[name] = total
    return {n: sizes.get(n, 0) for n in packages}


def build(
    target: Target = Target(),
    dist: Path = DEFAULT_DIST,
    wheel_cache: Path = DEFAULT_WHEEL_CACHE,
    entry_point: Path = REPO_ROOT / "app" / "job.py",
    connector_dir: Path = REPO_ROOT / "app" / "s3sqs",
    pyproject: Path = REPO_ROOT / "pyproject.toml",
    compresslevel: int = DEFAULT_COMPRESS_LEVEL,
    transform_modules: tuple[Path, ...] = (),
) -> BuildResult:
    started = time.monotonic()
    if not entry_point.is_file():
        raise PackagingError(f"entry point {entry_point} not found")
    if not connector_dir.is_dir():
        raise PackagingError(f"connector package {connector_dir} not found")
    extra = transform_module_files(transform_modules)  # a bad path fails before any download
    pins = resolve_pins(runtime_requirements(pyproject))
    wheels = fetch_wheels(pins, target, Path(wheel_cache))
    check_closure(wheels, pins, target)

    dist = Path(dist)
    dist.mkdir(parents=True, exist_ok=True)
    artifacts = []
    with tempfile.TemporaryDirectory(prefix="s3sqs-env-") as tmp:
        env_root = Path(tmp) / "env"
        site = lay_out_environment(env_root, target)
        install_wheels(wheels, target, site)
        package_sizes = _package_sizes(site, pins)
        env_out = dist / target.env_archive_name
        log(f"writing {_rel(env_out)}")
        unpacked = write_tar_gz(env_root, env_out, compresslevel, log=log)
        artifacts.append(Artifact(target.env_archive_name, env_out, env_out.stat().st_size, sha256_of(env_out),
                                  unpacked, f"#{ENV_ARCHIVE_ALIAS}: Python {target.python}, {target.arch}"))

    conn_out = dist / CONNECTOR_NAME
    unpacked = write_connector_zip(connector_dir, conn_out, extra)
    modules = tuple(sorted({name.split("/")[0].removesuffix(".py") for name in extra}))
    artifacts.append(Artifact(CONNECTOR_NAME, conn_out, conn_out.stat().st_size, sha256_of(conn_out), unpacked,
                              f"#{CONNECTOR_ARCHIVE_ALIAS}: the s3sqs package"
                              + (f" and {', '.join(modules)}" if modules else "")))

    entry_out = dist / ENTRY_POINT_NAME
    shutil.copyfile(entry_point, entry_out)
    artifacts.append(Artifact(ENTRY_POINT_NAME, entry_out, entry_out.stat().st_size, sha256_of(entry_out),
                              note="entry point"))

    result = BuildResult(dist, target, artifacts, pins, package_sizes, time.monotonic() - started, modules)
    write_manifest(result)
    return result


def write_manifest(result: BuildResult) -> Path:
    t = result.target
    manifest = {
        "target": {"python": t.python, "arch": t.arch, "glibc": t.glibc, "python_home": t.python_home,
                   "emr_architecture": t.emr_architecture},
        "entry_point": ENTRY_POINT_NAME,
        "connector": CONNECTOR_NAME,
        "environment": t.env_archive_name,
        "artifacts": {a.name: {"size": a.size, "sha256": a.sha256, "unpacked_size": a.unpacked_size}
                      for a in result.artifacts},
        "packages": result.packages,
        "transform_modules": list(result.transform_modules),
    }
    path = result.dist / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def human(n: int | None) -> str:
    return "-" if n is None else human_bytes(n)


def _rel(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def report(result: BuildResult) -> str:
    rows = [("artifact", "size", "unpacked", "sha256", "")]
    for a in result.artifacts:
        rows.append((_rel(a.path), human(a.size), human(a.unpacked_size), a.sha256[:12], a.note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + ("  " + r[4] if r[4] else "") for r in rows]
    lines.append("")
    lines.append(f"environment contents ({result.target.tag}, unpacked):")
    for name, version in result.packages.items():
        lines.append(f"  {name}=={version}".ljust(34) + human(result.package_sizes.get(name)).rjust(10))
    lines.append(f"built in {result.seconds:.1f} s; manifest: {_rel(result.dist / MANIFEST_NAME)}")
    return "\n".join(lines)


def load_manifest(dist: Path = DEFAULT_DIST) -> dict:
    """The manifest of a finished build, with every artifact present and unchanged."""
    dist = Path(dist)
    path = dist / MANIFEST_NAME
    if not path.is_file():
        raise PackagingError(f"{_rel(path)} not found: run {command('package-job')} first")
    manifest = json.loads(path.read_text())
    for name, meta in manifest["artifacts"].items():
        p = dist / name
        if not p.is_file():
            raise PackagingError(f"{_rel(p)} is missing: run {command('package-job')} again")
        if p.stat().st_size != meta["size"]:
            raise PackagingError(f"{_rel(p)} changed since it was built: run {command('package-job')} again")
    return manifest

