"""Bytecode for Spark's zipped pyspark: every Python process Spark starts (the streaming runner, each
planner and worker daemon, the driver under spark-submit) has $SPARK_HOME/python/lib/pyspark.zip first
on its path. The zip holds sources only, and Python writes no bytecode into a zip, so each of those
processes compiled pyspark anew: 0.8 s of a one-file run's every Python process, five of them on its
critical path.

`install()` unpacks each such zip once per machine and user into a private folder (~/.cache/s3sqs/
zipped-pyspark, else under $TMPDIR) and puts the folder in the zip's place on `sys.path`. Its modules
keep their bytecode beside them, as an installed package's do, even where PYTHONDONTWRITEBYTECODE is
set: the first process compiles what it imports, the next ones load it. The same files, so the same
modules. A `.pth` file in the job's environment calls it as each interpreter starts (make setup's
venvs; ops/packaging/build.py's EMR environment). It does nothing where no such zip is on the path, and
leaves the zip in place when no folder can be made.

Only the standard library: it runs as every interpreter of the environment starts.
"""
from __future__ import annotations

import marshal
import os
import stat
import struct
import sys
from importlib.machinery import SOURCE_SUFFIXES, FileFinder, SourceFileLoader
from importlib.util import MAGIC_NUMBER, cache_from_source

ENV_OFF = "S3SQS_ZIPPED_PYSPARK"  # "off": leave the zips as Spark put them
# Sorted after s3sqs-connector.pth (ops/packaging/build.py), which puts the package on the path first.
PTH_NAME = "s3sqs-zipped-pyspark.pth"
PTH_LINE = "import s3sqs.core.zipped_pyspark as zipped; zipped.install()\n"


def is_spark_zip(entry: str) -> bool:
    """One of the zips Spark puts on its Python processes' path (PythonUtils.sparkPythonPaths)."""
    name = os.path.basename(entry)
    return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip"))


def cache_roots() -> list[str]:
    """Where the folders may go, in order: the user's cache (no cleaner ages files out of it under a
    stream that runs for weeks), else the temporary directory (a container without a home)."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tmp = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"s3sqs-zipped-pyspark-{os.getuid()}")
    return [os.path.join(home, "s3sqs", "zipped-pyspark"), tmp]


def unpacked_name(zip_path: str, size: int, mtime_ns: int) -> str:
    """The folder of one zip's files: its name, where it is and which version of it (size, time)."""
    import zlib
    where = zlib.crc32(os.path.realpath(zip_path).encode())
    return f"{os.path.basename(zip_path)[:-4]}-{where:08x}-{size}-{mtime_ns}"


def private_dir(path: str) -> bool:
    """Ours and closed to others: code imported from it must be what we unpacked."""
    st = os.lstat(path)  # a symlink is not a folder of ours
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def unpack(zip_path: str, root: str) -> str:
    """The folder holding `zip_path`'s files under `root`, unpacked now if no process has yet."""
    st = os.stat(zip_path)
    target = os.path.join(root, unpacked_name(zip_path, st.st_size, st.st_mtime_ns))
    if os.path.isdir(target):
        return target
    import shutil
    import zipfile
    partial = f"{target}.{os.getpid()}.partial"
    try:
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # a full disk leaves no half copy behind
        raise
    try:
        os.rename(partial, target)  # atomic: a folder under its final name is whole
    except OSError:
        if not os.path.isdir(target):
            raise
        shutil.rmtree(partial, ignore_errors=True)  # another process won the race; its copy is the same
    return target


class _BytecodeKeepingLoader(SourceFileLoader):
    """A source loader that keeps its bytecode whatever sys.dont_write_bytecode says: the folder is a
    cache of ours, not the user's tree. The files are CPython's own timestamp-checked .pyc."""

    def get_code(self, fullname):
        source_path = self.get_filename(fullname)
        st = os.stat(source_path)
        pyc = cache_from_source(source_path)
        header = MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
        try:
            with open(pyc, "rb") as f:
                data = f.read()
            if data[:16] == header:
                return marshal.loads(memoryview(data)[16:])
        except (OSError, ValueError, EOFError, TypeError):
            pass  # none yet, or unreadable: compile as below
        code = self.source_to_code(self.get_data(source_path), source_path)
        try:
            os.makedirs(os.path.dirname(pyc), exist_ok=True)
            partial = f"{pyc}.{os.getpid()}"
            with open(partial, "wb") as f:
                f.write(header + marshal.dumps(code))
            os.replace(partial, pyc)
        except OSError:
            pass  # as CPython does when it cannot write a .pyc: the next process compiles again
        return code


def _path_hook(root: str):
    """Imports from folders under `root` with the loader above; every other path is not ours."""
    finder_for = FileFinder.path_hook((_BytecodeKeepingLoader, SOURCE_SUFFIXES))

    def hook(path: str):
        if path != root and not path.startswith(root + os.sep):
            raise ImportError("not an unpacked Spark zip")
        return finder_for(path)
    hook.s3sqs_root = root
    return hook


def install(path: list[str] | None = None, root: str | None = None) -> list[str]:
    """Put an unpacked folder in place of each Spark zip on `path` (sys.path); returns the folders."""
    path = sys.path if path is None else path
    zips = [i for i, entry in enumerate(path) if is_spark_zip(entry) and os.path.isfile(entry)]
    if not zips or os.environ.get(ENV_OFF, "").lower() == "off":
        return []
    problems = []
    for root in [root] if root else cache_roots():
        try:
            os.makedirs(root, mode=0o700, exist_ok=True)
            if not private_dir(root):
                raise PermissionError(f"{root} is not private to this user; remove it")
            folders = [unpack(path[i], root) for i in zips]
            break
        except Exception as e:  # no home, a full disk, a damaged zip: the next place, else the zips as they are
            problems.append(f"{root}: {e}")
    else:
        print(f"s3sqs: importing pyspark from its zip, without bytecode ({'; '.join(problems)}); set "
              f"{ENV_OFF}=off to skip this", file=sys.stderr)
        return []
    if not any(getattr(h, "s3sqs_root", None) == root for h in sys.path_hooks):
        sys.path_hooks.insert(0, _path_hook(root))
    for i, folder in zip(zips, folders):
        path[i] = folder
    return folders


def write_pth(site_packages: str) -> str:
    """The `.pth` file that runs `install` as each interpreter of the environment starts (make setup
    calls this in each venv; ops/packaging/build.py in the EMR environment)."""
    path = os.path.join(site_packages, PTH_NAME)
    with open(path, "w") as f:
        f.write(PTH_LINE)
    return path
