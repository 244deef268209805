"""`make test` in two lanes at once: every test on PySpark 4.3, and beside it the Spark tests again on
PySpark 4.0.2 (EMR's version), with the chaos runs and the local-cluster tests (executors in JVMs of their
own), which run there only. A Spark test spends much of its time waiting (JVM start-up, long polls,
trigger intervals), so the two lanes share the machine's two cores well: the suite takes about the time
of the longer lane instead of the sum. The 4.3 lane prints as it goes; the 4.0.2 lane's output follows
it. Either lane failing (or finding no tests) fails the run.

    python devtools/test_lanes.py [--serial] [extra pytest args...]
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANES = (  # name, interpreter, pytest marker expression
    ("PySpark 4.3, every test", ROOT / ".venv" / "bin" / "python", "not chaos and not cluster"),
    ("PySpark 4.0.2, the Spark tests", ROOT / ".venv-spark40" / "bin" / "python", "spark or chaos or cluster"),
)


def command(python: Path, marker: str, lane: int, extra: list[str]) -> list[str]:
    # Each lane its own temporary root: pytest keeps only its newest few and would remove the other's.
    return [str(python), "-m", "pytest", "-q", "-m", marker, f"--basetemp={ROOT / '.pytest-tmp' / f'lane{lane}'}",
            *extra]


def main(argv: list[str]) -> int:
    serial = "--serial" in argv
    extra = [a for a in argv if a != "--serial"]
    started = time.monotonic()
    (ROOT / ".pytest-tmp").mkdir(exist_ok=True)
    log = ROOT / ".pytest-tmp" / "lane2.log"
    (name1, py1, m1), (name2, py2, m2) = LANES
    second = None
    if not serial:
        print(f"==> lane 2 ({name2}) runs in the background; its output follows lane 1's", flush=True)
        with open(log, "w") as out:
            second = subprocess.Popen(command(py2, m2, 2, extra), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                      env=os.environ.copy())
    print(f"==> lane 1 ({name1})", flush=True)
    try:
        rc1 = subprocess.call(command(py1, m1, 1, extra), cwd=ROOT)
        if second is None:
            print(f"==> lane 2 ({name2})", flush=True)
            rc2 = subprocess.call(command(py2, m2, 2, extra), cwd=ROOT)
        else:
            print(f"==> lane 1 done (exit {rc1}); waiting for lane 2 ({name2})", flush=True)
            rc2 = second.wait()
            print(f"==> lane 2 output ({name2}):", flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
    finally:
        if second is not None and second.poll() is None:  # interrupted: stop the other lane too
            second.terminate()
            second.wait(30)
    minutes = (time.monotonic() - started) / 60
    print(f"==> lane 1 exit {rc1}, lane 2 exit {rc2}; {minutes:.1f} min in all", flush=True)
    return 0 if rc1 == rc2 == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
