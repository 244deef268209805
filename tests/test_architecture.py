"""The connector's packages are laid out by the process that runs them (docs/layout.md); these tests keep
each package to what it may import, the executors' reading code free of driver-side libraries, and every
class small enough to read."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"
PACKAGE = APP / "s3sqs"

# Package -> the connector's packages (or modules) it may import besides its own.
ALLOWED = {
    "core": set(),
    "config": {"core"},
    "state": {"core", "config"},
    # Executors write quarantine records and schema proposals in the state's layout, and take the format
    # options' defaults;
    # nothing else of the driver side.
    "reading": {"core", "config.format_options", "state.quarantine", "state.schemas", "state.store"},
    "planning": {"core", "config", "state", "reading"},
    "sinks": {"core", "config"},
    # The source cleaner runs on an operator's machine or a scheduled run, never in the stream's processes.
    "cleaning": {"core", "config", "state"},
    "job": {"core", "config", "state", "planning", "sinks"},
}
MAX_CLASS_LINES = 150


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def package_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0]


def imported(path: Path) -> set[str]:
    """The s3sqs modules a file imports, anywhere in it (functions too), as dotted names below s3sqs."""
    tree = ast.parse(path.read_text())
    here = path.relative_to(APP).with_suffix("").parts  # ("s3sqs", "planning", "intake")
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("s3sqs.") for a in node.names if a.name.startswith("s3sqs.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level]
                name = ".".join(base[1:] + ((node.module,) if node.module else ()))
            elif (node.module or "").startswith("s3sqs."):
                name = node.module.removeprefix("s3sqs.")
            else:
                continue
            if not node.module:  # from .. import sinks: each name is a module
                out |= {f"{name}.{a.name}".strip(".") for a in node.names}
            else:
                out.add(name)
    return {m for m in out if m}


def allowed(package: str, target: str) -> bool:
    if target.split(".")[0] == package:
        return True
    return any(target == a or target.startswith(a + ".") for a in ALLOWED[package])


def test_every_package_has_a_rule():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(APP)))
def test_imports_cross_only_the_boundaries_the_layout_allows(path):
    if path.parent == PACKAGE:
        return  # s3sqs/__init__.py: the map of the packages
    package = package_of(path)
    wrong = sorted(t for t in imported(path) if not allowed(package, t))
    assert not wrong, f"{path.relative_to(APP)} ({package}) imports {wrong}; allowed: {sorted(ALLOWED[package])}"


# What Spark's Python processes import to plan: the query's source classes (the direct write's is the default).
PLANNING = "s3sqs.planning.source, s3sqs.planning.controller, s3sqs.job.direct_write"


def loaded(imports: str, which: str) -> list[str]:
    """The modules a fresh interpreter holds after `import <imports>` for which `which`, an expression
    in `m` (a module's name), is true."""
    code = f"import sys; import {imports}; print(','.join(sorted(m for m in sys.modules if {which})))"
    # APP first on the path from the start: the environment's .pth files import s3sqs as the interpreter
    # starts, before any sys.path change in `code` could take effect.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(APP), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return [m for m in r.stdout.strip().split(",") if m]


def test_the_executors_reading_code_loads_no_driver_side_library():
    assert loaded("s3sqs.reading.reader, s3sqs.reading.formats",
                  "m.split('.')[0] in ('boto3', 'botocore', 'rocksdict', 'pyspark', 'pydantic') or "
                  "m.startswith(('s3sqs.planning', 's3sqs.job', 's3sqs.sinks', 's3sqs.config.')) "
                  "and m != 's3sqs.config.format_options'") == []


def test_spark_s_runner_and_planner_load_no_validator():
    """They start after the query does; pydantic's import alone costs as much as reading a batch of small files."""
    assert loaded(PLANNING, "m == 'pydantic'") == []


def test_spark_s_runner_and_planner_load_no_file_reader_or_writer():
    """Only the tasks read and write files: the processes that plan build the read and write specs without
    the readers or the table files' writer, and a format's own module is loaded when a task first asks for it."""
    from s3sqs.reading.formats import MODULES

    formats = tuple(MODULES.values())  # every format's module, a new one included
    assert loaded(PLANNING, "m in ('s3sqs.reading.reader', 's3sqs.sinks.table_files', 'pyarrow.compute') or "
                            f"m.startswith('s3sqs.reading.formats.') and m.split('.')[-1] in {formats!r}") == []


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(APP)))
def test_no_class_is_longer_than_a_screenful_or_two(path):
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.ClassDef) and n.end_lineno - n.lineno + 1 > MAX_CLASS_LINES]
    assert not long, f"{path.relative_to(APP)}: {long} (at most {MAX_CLASS_LINES} lines a class)"


def test_the_rules_are_enforced_on_a_forbidden_import(tmp_path):
    """The checker itself: a reading module that reaches into planning is caught."""
    bad = PACKAGE / "reading" / "_probe_forbidden.py"
    bad.write_text("from ..planning import fates\n")
    try:
        assert not all(allowed("reading", t) for t in imported(bad))
    finally:
        bad.unlink()
