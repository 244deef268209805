"""Static checks on the synthesized app, in each of CHECKED_CONTEXTS: cdk-nag AwsSolutions, cfn-lint, checkov."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks

from infra.app import build_app, cdk_json_context
from tests.infra.checkov_accepted import ACCEPTED
from tests.infra.conftest import CHECKED_CONTEXTS


def _all_constructs(root):
    yield root
    for child in root.node.children:
        yield from _all_constructs(child)


@pytest.fixture(scope="module", params=sorted(CHECKED_CONTEXTS))
def app(request):
    context = {**cdk_json_context(), **CHECKED_CONTEXTS[request.param]}
    app, _ = build_app(context, nag=False, builtin_validation=False)
    return app


def test_aws_solutions_checks_have_no_unacknowledged_findings(app):
    report = AwsSolutionsChecks().validate_scope(app)
    findings = [
        f"{v.rule_name} at {', '.join(r.construct_path for r in v.violating_resources)}"
        for v in report.violations
    ]
    assert findings == []
    assert report.success


def test_every_acknowledgment_carries_a_reason(app):
    acknowledged = {}
    for construct in _all_constructs(app):
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    acknowledged[f"{construct.node.path} {rule}"] = reason
    assert acknowledged, "expected the known acknowledgments (access-log bucket, DLQ, job-role prefixes)"
    for where, reason in acknowledged.items():
        assert isinstance(reason, str) and len(reason.split()) >= 5, f"{where}: reason {reason!r} is too thin"
    rules = {w.split(" ", 1)[1].removeprefix("Annotation::").split("[")[0] for w in acknowledged}
    # Only these rules are acknowledged anywhere; anything new needs a look.
    assert rules <= {"AwsSolutions-S1", "AwsSolutions-SQS3", "AwsSolutions-IAM4", "AwsSolutions-IAM5"}


def test_acknowledged_wildcards_are_prefix_scoped(app):
    """IAM5 acknowledgments cover only object-key or log-stream patterns; a bare '*' only for an action the
    Service Authorization Reference gives no resource type (logs:DescribeLogGroups), which takes nothing else."""
    for construct in _all_constructs(app):
        for entry in construct.node.metadata:
            if entry.type != Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                continue
            for rule, reason in entry.data.items():
                if "IAM5" in rule:
                    assert "[Resource::" in rule, rule
                    assert not rule.endswith("[Resource::*]") or "DescribeLogGroups" in reason, (rule, reason)


def _write_templates(tmp_path: Path, templates: dict[str, dict]) -> list[str]:
    files = []
    for name, tpl in sorted(templates.items()):
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(tpl))
        files.append(str(path))
    return files


def test_cfn_lint_is_clean(tmp_path, checked_templates):
    files = _write_templates(tmp_path, checked_templates)
    # W3005: CDK's own notification resources carry a redundant DependsOn.
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", *files],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_checkov_finds_nothing_that_is_not_accepted(tmp_path, checked_templates):
    """Every failed checkov check is in checkov_accepted.ACCEPTED, and every entry there is still needed."""
    _write_templates(tmp_path, checked_templates)
    failed = run_checkov(tmp_path)
    unaccepted = sorted(f"{c} {ctx}:{lid} ({name})" for c, ctx, lid, name in failed if not _accepted(c, ctx, lid))
    assert unaccepted == [], "checkov findings with no accepted reason:\n" + "\n".join(unaccepted)
    used = {c for c, ctx, lid, _ in failed if _accepted(c, ctx, lid)}
    assert sorted(set(ACCEPTED) - used) == [], "accepted checkov findings that no longer occur: drop them"
    for check_id, (_, _, reason) in ACCEPTED.items():
        assert len(reason.split()) >= 8, f"{check_id}: reason too thin"


def _accepted(check_id: str, context: str, logical_id: str) -> bool:
    if check_id not in ACCEPTED:
        return False
    prefixes, contexts, _ = ACCEPTED[check_id]
    return (contexts is None or context in contexts) and any(logical_id.startswith(p) for p in prefixes)


def run_checkov(directory: Path) -> list[tuple[str, str, str, str]]:
    """Run checkov offline on every template in `directory`; (check id, context, logical id, check name) of each
    failed check. Nothing is skipped here: acceptance is decided against ACCEPTED, one place."""
    env = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
           "BC_SKIP_MAPPING": "TRUE"}
    result = subprocess.run(
        [str(Path(sys.executable).parent / "checkov"), "--directory", str(directory), "--framework", "cloudformation",
         "--skip-download", "--quiet", "--compact", "--output", "json"],
        capture_output=True, text=True, timeout=300, env=env,
    )
    # checkov exits 1 when a check failed; anything else, or no report, is a broken run.
    assert result.returncode in (0, 1) and result.stdout.strip(), result.stderr[-2000:]
    reports = json.loads(result.stdout)
    failed = []
    for report in reports if isinstance(reports, list) else [reports]:
        assert report["summary"]["parsing_errors"] == 0, report["summary"]
        for c in report.get("results", {}).get("failed_checks", []):
            context = Path(c["file_path"]).name.removesuffix(".template.json")
            failed.append((c["check_id"], context, c["resource"].split(".", 1)[1], c["check_name"]))
    return failed
