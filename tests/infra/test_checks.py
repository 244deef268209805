"""Static checks on the synthesized app: cdk-nag AwsSolutions and cfn-lint."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aws_cdk import Validations
from cdk_nag import AwsSolutionsChecks

from infra.app import build_app, cdk_json_context
from tests.infra.conftest import VARIANT_CONTEXT


def _all_constructs(root):
    yield root
    for child in root.node.children:
        yield from _all_constructs(child)


@pytest.fixture(scope="module", params=["default", "variant"])
def app(request):
    context = cdk_json_context()
    if request.param == "variant":
        context.update(VARIANT_CONTEXT)
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
    """IAM5 acknowledgments cover only object-key or log-stream patterns, never a bare '*'."""
    for construct in _all_constructs(app):
        for entry in construct.node.metadata:
            if entry.type != Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                continue
            for rule in entry.data:
                if "IAM5" in rule:
                    assert "[Resource::" in rule and not rule.endswith("[Resource::*]"), rule


def test_cfn_lint_is_clean(tmp_path, template_dict, variant_template_dict):
    files = []
    for name, tpl in (("default", template_dict), ("variant", variant_template_dict)):
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(tpl))
        files.append(str(path))
    # W3005: CDK's own notification resources carry a redundant DependsOn.
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", *files],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
