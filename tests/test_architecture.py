"""The connector's packages are laid out by the process that runs them (docs/layout.md); these tests keep
each package to what it may import, the executors' reading code free of driver-side libraries, every class
and function small enough to read (in app/, infra/ and ops/), one construct per infra module, the alarms in
one, the layout's folder names in core/layout.py alone, and one registered class per sink kind."""
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
MAX_FUNCTION_LINES = 80
ROOT = APP.parent
# Where the size rules hold: the connector, the stack and the operator tools.
SIZED = sorted(p for folder in ("app", "infra", "ops") for p in (ROOT / folder).rglob("*.py"))


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


@pytest.mark.parametrize("path", SIZED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_class_or_function_is_longer_than_a_screenful_or_two(path):
    too_long = []
    for n in ast.walk(ast.parse(path.read_text())):
        limit = MAX_CLASS_LINES if isinstance(n, ast.ClassDef) else MAX_FUNCTION_LINES \
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if limit and n.end_lineno - n.lineno + 1 > limit:
            too_long.append((n.name, n.end_lineno - n.lineno + 1, limit))
    assert not too_long, f"{path.relative_to(ROOT)}: (name, lines, at most) {too_long}"


def _constructs(path: Path) -> list[str]:
    return [n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)
            and any(getattr(b, "id", getattr(b, "attr", "")) in ("Construct", "Stack") for b in n.bases)]


@pytest.mark.parametrize("path", sorted((ROOT / "infra").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_infra_module_holds_at_most_one_construct(path):
    assert len(_constructs(path)) <= 1, f"{path.relative_to(ROOT)}: {_constructs(path)}"


def test_the_stack_s_alarms_are_made_in_one_module():
    makers = {p.relative_to(ROOT) for p in (ROOT / "infra").rglob("*.py")
              for n in ast.walk(ast.parse(p.read_text()))
              if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "Alarm"}
    assert len(makers) == 1, f"alarms are made in {sorted(map(str, makers))}"


def test_folder_names_of_the_layout_are_spelled_only_in_core_layout():
    from s3sqs.core import layout

    names = {layout.SCHEMA_DIR, layout.CHECKPOINTS_PREFIX, layout.OUTPUT_PREFIX, layout.SOURCE_CLEANING_PREFIX,
             layout.JOB_ARTIFACTS_PREFIX, layout.EMR_LOGS_PREFIX, f"{layout.STATE_DIR}/"}
    spelled = sorted((str(p.relative_to(ROOT)), n.value) for p in SIZED if p.name != "layout.py"
                     for n in ast.walk(ast.parse(p.read_text()))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names)
    assert not spelled, f"use s3sqs.core.layout instead: {spelled}"


def test_every_sink_kind_is_one_registered_class():
    from s3sqs.sinks.kinds import SinkKind, sink_class
    from s3sqs.sinks.kinds.base import Sink

    for kind in SinkKind:
        cls = sink_class(kind)
        assert issubclass(cls, Sink) and cls.kind == kind.value
        assert cls.own_settings is not Sink.own_settings and cls.describe is not Sink.describe


def test_the_rules_are_enforced_on_a_forbidden_import(tmp_path):
    """The checker itself: a reading module that reaches into planning is caught."""
    bad = PACKAGE / "reading" / "_probe_forbidden.py"
    bad.write_text("from ..planning import fates\n")
    try:
        assert not all(allowed("reading", t) for t in imported(bad))
    finally:
        bad.unlink()


def test_the_tests_mirror_the_packages():
    """A test lives in the folder of the package it tests: tests/<package>/ for app/s3sqs/<package>/ (their
    sub-packages below), and tests/infra, tests/ops/<tool>, tests/devtools, tests/scripts; only the tests of
    the whole (system, iam) and what tests share (support, data) stand apart."""
    apart = {"system", "iam", "support", "data"}
    tests = ROOT / "tests"
    strays = []
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir() and "__pycache__" not in p.parts):
        parts = folder.relative_to(tests).parts
        if parts[0] in apart:
            continue
        home = ROOT / parts[0] if parts[0] in ("infra", "ops", "devtools", "scripts") else PACKAGE.joinpath(*parts[:1])
        home = home.joinpath(*parts[1:])
        if not (home.is_dir() or home.with_suffix(".py").is_file()):
            strays.append(str(folder.relative_to(ROOT)))
    assert not strays, f"test folders with no package of that name: {strays}"
