"""`cdk synth` through the pinned CLI, offline and without AWS credentials."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from devtools.local_aws import EXAMPLE_CDK_JSON
from infra import STACK_NAME

REPO = Path(__file__).resolve().parents[2]
CDK = REPO / "node_modules" / ".bin" / "cdk"


def _offline_prefix() -> list[str]:
    """Run in a network namespace with no interfaces when the kernel allows it."""
    if shutil.which("unshare"):
        probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "-rn"]
    return []


def _run_cdk(args: list[str], home: Path) -> subprocess.CompletedProcess:
    if not CDK.exists():
        pytest.fail("the pinned CDK CLI is missing: run `npm ci` (or `make setup`)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({
        "HOME": str(home),  # no ~/.aws config or credentials either
        "CDK_DISABLE_VERSION_CHECK": "1",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        # Where no network namespace is available, any connection attempt fails fast instead.
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
    })
    # The tests' stack, the two-account example, as the CLI reads a cdk.json: from the folder it runs in.
    config = json.loads(EXAMPLE_CDK_JSON.read_text())
    config["app"] = config["app"].replace(".venv/", f"{REPO / '.venv'}/", 1)
    work = home / "project"
    work.mkdir(exist_ok=True)
    (work / "cdk.json").write_text(json.dumps(config))
    return subprocess.run(_offline_prefix() + [str(CDK), *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)


def _comparable(template: dict) -> dict:
    """Drop what only the CLI adds: path metadata and the version-reporting resource."""
    t = json.loads(json.dumps(template))
    t["Resources"].pop("CDKMetadata", None)
    t.pop("Conditions", None)
    for r in t["Resources"].values():
        r.pop("Metadata", None)
    return t


def test_the_installed_cli_is_the_pinned_one():
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["aws-cdk"]
    installed = json.loads((REPO / "node_modules" / "aws-cdk" / "package.json").read_text())["version"]
    assert pinned == installed == "2.1148.1"


def test_cli_synth_offline_matches_the_in_process_template(tmp_path, template_dict):
    out = tmp_path / "cdk.out"
    # The full synth an operator runs: builtin validation and the cdk-nag plugin included.
    result = _run_cdk(["synth", "--quiet", "--output", str(out)], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    cli_template = json.loads((out / f"{STACK_NAME}.template.json").read_text())
    assert _comparable(cli_template) == _comparable(template_dict)
    report = json.loads((out / "validation-report.json").read_text())
    assert report["pluginReports"] == []


def test_cli_synth_rejects_a_bad_context_value_naming_the_key(tmp_path):
    bad = json.dumps([{"name": "ingest", "accountId": "123"}])
    result = _run_cdk(["synth", "--quiet", "--no-validation", "--output", str(tmp_path / "cdk.out"),
                       "-c", f"consumers={bad}"], tmp_path)
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "consumers[0].accountId: '123' is not allowed; allowed: a 12-digit AWS account id string" in text


def test_cli_synth_rejects_a_bad_alarm_email_naming_the_key(tmp_path):
    """Alarm settings given with -c are JSON text, checked like cdk.json's (the cases: tests/infra/test_config.py)."""
    alarms = json.dumps({"emails": ["ops@example.com", "oncall"]})
    result = _run_cdk(["synth", "--quiet", "--no-validation", "--output", str(tmp_path / "cdk.out"),
                       "-c", f"alarms={alarms}"], tmp_path)
    assert result.returncode != 0
    assert ("cdk.json context is invalid: alarms.emails[1]: 'oncall' is not an e-mail address; allowed: an address "
            "such as ops@example.com") in result.stdout + result.stderr
