"""Bad flags fail before Spark starts: one line naming the flag and the fix, exit code 2, no traceback."""
import subprocess
import sys
import time

import pytest

from devtools.local_spark import ROOT, job_env
from tests.support.aws import bucket_to_queue


def run_job(*args):
    t0 = time.monotonic()
    # The job's own interpreter, as spark-submit starts it: the checks run before any JVM.
    r = subprocess.run([sys.executable, str(ROOT / "app" / "job.py"), *args], env=job_env(), cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    return r, time.monotonic() - t0


@pytest.fixture(scope="module")
def wiring(moto_endpoint):
    return bucket_to_queue(moto_endpoint)


def base(w, tmp_path, **over):
    args = {"--queue-url": w.queue_url, "--format": "csv", "--schema": "id LONG", "--checkpoint": str(tmp_path / "ck"),
            "--output": str(tmp_path / "out"), "--endpoint-url": w.endpoint, "--region": "us-east-1"}
    args.update(over)
    return [x for kv in args.items() for x in kv if x is not None]


@pytest.mark.parametrize("change, expected", [
    ({"--option": "maxFilesPerTriger=3"}, "unknown option 'maxFilesPerTriger': neither a source option nor a "
                                          "reader option of fileFormat csv; did you mean 'maxFilesPerTrigger'?"),
    ({"--queue-url": "QUEUE/nowhere"}, "no such queue"),
    ({"--checkpoint": "s3://no-such-bucket-here/ck"}, "bucket 'no-such-bucket-here' does not exist"),
    ({"--schema": "id LONG, name STRNG"}, "--schema: unknown type 'STRNG'"),
    ({"--partition-by": "day"}, "--partition-by: column 'day' is not in --schema; its columns are: "),
])
def test_bad_input_is_one_line_and_exit_2(wiring, tmp_path, change, expected):
    if change.get("--queue-url") == "QUEUE/nowhere":
        change = {"--queue-url": wiring.queue_url.rsplit("/", 1)[0] + "/nowhere"}
    r, seconds = run_job(*base(wiring, tmp_path, **change))
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("job.py: error: ") and expected in lines[0], r.stderr
    assert "Traceback" not in r.stderr and seconds < 30


def test_missing_credentials_are_named(wiring, tmp_path):
    env = {k: v for k, v in job_env().items() if not k.startswith("AWS_ACCESS") and not k.startswith("AWS_SECRET")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"), AWS_CONFIG_FILE=str(tmp_path / "none"))
    r = subprocess.run([sys.executable, str(ROOT / "app" / "job.py"), *base(wiring, tmp_path)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no AWS credentials found" in r.stderr and "Traceback" not in r.stderr


def test_debug_shows_the_traceback(wiring, tmp_path):
    r, _ = run_job(*base(wiring, tmp_path, **{"--option": "maxFilesPerTriger=3"}), "--debug")
    assert r.returncode != 0 and "Traceback" in r.stderr
