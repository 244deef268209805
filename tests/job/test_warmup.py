"""The warm-up's read imports what the stream's file format reads with (Avro: polars, 0.2 s), in a fresh
process as a Python worker is."""
import subprocess
import sys
from pathlib import Path

import pytest

APP = str(Path(__file__).resolve().parents[2] / "app")
PROBE = ("import sys; from s3sqs.job.warmup import WarmUpReader; "
         "list(WarmUpReader(1, {fmt!r}).read(None)); print('polars' in sys.modules, 'fastavro' in sys.modules)")


@pytest.mark.parametrize("fmt,imported", [("avro", "True True"), ("csv", "False False"), (None, "False False")])
def test_the_warm_up_imports_the_format_s_reader_dependencies(fmt, imported):
    out = subprocess.run([sys.executable, "-c", PROBE.format(fmt=fmt)], env={"PYTHONPATH": APP},
                         capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    assert out == imported
