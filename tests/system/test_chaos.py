"""The chaos script as part of the suite: SIGKILLs at random moments and hostile inputs, then an exact
account of every row and every message."""
import json
import subprocess
import sys

import pytest

from devtools.local_spark import ROOT, job_env


def chaos(*args, timeout):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "chaos.py"), *args, "--json"], cwd=ROOT,
                       env=job_env(), capture_output=True, text=True, timeout=timeout)
    lines = r.stdout.strip().splitlines()
    assert lines, r.stderr[-3000:]
    return r.returncode, json.loads(lines[-2]), lines[-1]


@pytest.mark.chaos
def test_random_sigkills_lose_and_duplicate_nothing():
    rc, account, verdict = chaos("kills", "--kills", "4", "--waves", "2", "--files", "8", "--seed", "11",
                                 timeout=1500)
    assert account["kills"] == 4 and account["final_exit"] == 0, account
    assert account["rows_lost"] == 0 and account["rows_duplicated"] == 0, account
    assert account["rows_expected"] == 2 * 8 * 20 and account["queue"] == 0 and account["dlq"] == 0, account
    assert rc == 0 and verdict == "OK"


def test_every_fuzzed_message_and_bad_file_has_a_logged_fate():
    rc, account, verdict = chaos("fuzz", timeout=900)
    families = account["families"]
    assert account["vanished"] == 0 and not account["crash"] and rc == 0 and verdict == "OK", account
    assert families["not JSON"] == {"unparseable": 3} and families["empty Records"] == {"no_records": 1}
    assert families["test event"] == {"test_event": 1} and families["ObjectRemoved"] == {"not_created": 1}
    assert families["MinIO event name"] == {"new": 1} and families["duplicate"] == {"duplicate": 1}
    assert families["file: corrupt gzip"] == {"quarantined": 1}
    assert families["file: deleted before read"] == {"missing": 1}
    assert families["file: zero bytes"] == {"ingested": 1}
    assert families["file: wrong column count"] == {"malformed_rows": 1}
