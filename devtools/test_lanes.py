"""`make test` in three lanes at once: on PySpark 4.3 the tests that drive no Spark, and the Spark tests;
beside them the Spark tests again on PySpark 4.0.2 (EMR's version), with the chaos runs and the
local-cluster tests (executors in JVMs of their own), which run there only. The tests of dist/ share one
build of it (a minute of gzip), so they run in one lane: the Spark tests' on 4.3. A Spark test spends much
of its time waiting (JVM start-up, long polls, trigger intervals), and three lanes keep the machine's two
cores busy to the end instead of leaving one idle behind the longest lane: the suite takes about half its
summed CPU time. The first lane prints as it goes; the others' output follows it. Any lane failing (or
finding no tests) fails the run.

    python devtools/test_lanes.py [--serial] [extra pytest args...]
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY43, PY40 = ROOT / ".venv" / "bin" / "python", ROOT / ".venv-spark40" / "bin" / "python"
LANES = (  # name, interpreter, pytest marker expression
    ("PySpark 4.3, the tests without Spark or dist/", PY43, "not spark and not chaos and not cluster and not dist"),
    ("PySpark 4.3, the Spark tests and dist/'s", PY43, "(spark or dist) and not chaos and not cluster"),
    ("PySpark 4.0.2, the Spark, chaos and cluster tests", PY40, "spark or chaos or cluster"),
)


def command(python: Path, marker: str, lane: int, extra: list[str]) -> list[str]:
    # Each lane its own temporary root: pytest keeps only its newest few and would remove the others'.
    return [str(python), "-m", "pytest", "-q", "-m", marker, f"--basetemp={ROOT / '.pytest-tmp' / f'lane{lane}'}",
            *extra]


def main(argv: list[str]) -> int:
    serial = "--serial" in argv
    extra = [a for a in argv if a != "--serial"]
    started = time.monotonic()
    (ROOT / ".pytest-tmp").mkdir(exist_ok=True)
    background: dict[int, tuple[subprocess.Popen, Path]] = {}
    codes: dict[int, int] = {}
    try:
        if not serial:
            for n, (name, python, marker) in enumerate(LANES[1:], start=2):
                log = ROOT / ".pytest-tmp" / f"lane{n}.log"
                print(f"==> lane {n} ({name}) runs in the background; its output follows lane 1's", flush=True)
                with open(log, "w") as out:
                    proc = subprocess.Popen(command(python, marker, n, extra), cwd=ROOT, stdout=out,
                                            stderr=subprocess.STDOUT, env=os.environ.copy())
                background[n] = (proc, log)
        for n, (name, python, marker) in enumerate(LANES, start=1):
            if n in background:
                proc, log = background[n]
                print(f"==> waiting for lane {n} ({name})", flush=True)
                codes[n] = proc.wait()
                print(f"==> lane {n} output ({name}):", flush=True)
                sys.stdout.write(log.read_text(errors="replace"))
            else:
                print(f"==> lane {n} ({name})", flush=True)
                codes[n] = subprocess.call(command(python, marker, n, extra), cwd=ROOT)
            print(f"==> lane {n} exit {codes[n]} ({(time.monotonic() - started) / 60:.1f} min in)", flush=True)
    finally:
        for proc, _ in background.values():  # interrupted: stop the other lanes too
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
    minutes = (time.monotonic() - started) / 60
    print(f"==> exits {', '.join(f'lane {n}: {c}' for n, c in codes.items())}; {minutes:.1f} min in all", flush=True)
    return 0 if len(codes) == len(LANES) and not any(codes.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
