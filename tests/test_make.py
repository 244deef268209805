"""The Makefile: what `make setup` shows while it works, and the local-stack targets."""
from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def dry_run(*targets: str) -> list[str]:
    """The commands make would run, forced as on a fresh clone (-B), without running them (-n)."""
    r = subprocess.run(["make", "--no-print-directory", "-n", "-B", "-C", str(REPO), *targets],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_setup_announces_each_long_step_and_lets_pip_show_its_progress():
    lines = dry_run("setup")
    banners = [i for i, line in enumerate(lines) if line.startswith('echo "==> setup ')]
    starts = [lines[i] for i in banners if " done: " not in lines[i]]
    assert [s.split(":")[0] for s in starts] == ['echo "==> setup 1/4', 'echo "==> setup 2/4', 'echo "==> setup 3/4',
                                                 'echo "==> setup 4/4']
    installs = [line for line in lines if " install " in line and "-e '." in line]
    assert len(installs) == 2 and not [line for line in installs if "--quiet" in line]
    # Each banner comes before the work it announces.
    assert lines.index(next(line for line in installs if ".venv/bin/pip" in line)) > banners[0]
    assert lines.index(next(line for line in lines if line.startswith("npm ci"))) > banners[-2]
    # Spark's table writers' jars come with the 4.0.2 environment, pinned and checked; S3A's only on demand.
    assert ".venv-spark40/bin/python -m devtools.jars fetch tables" in lines
    assert not [line for line in lines if "fetch s3a" in line]
    # Each venv gets the .pth that gives Spark's zipped pyspark bytecode.
    for venv in (".venv", ".venv-spark40"):
        assert (f"{venv}/bin/python -c 'import sysconfig, s3sqs.core.zipped_pyspark as z; "
                """print("wrote", z.write_pth(sysconfig.get_paths()["purelib"]))'""") in lines


def test_local_stack_targets_run_the_script_with_the_documented_defaults():
    assert dry_run("local-stack")[-1] == (".venv/bin/local-stack start --port 5000 "
                                          "--state-dir .local-stack --outputs-file cdk-outputs.json")
    assert dry_run("local-stack-stop")[-1] == ".venv/bin/local-stack stop --state-dir .local-stack"
