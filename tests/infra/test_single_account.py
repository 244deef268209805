"""The single-account context of README.md's quick start: it synthesizes as written, grants no outside
principal anything, and publishes what the tools read (the region, the consumer's Glue database)."""
from __future__ import annotations

import json

from tests.infra.conftest import SINGLE_ACCOUNT_CONTEXT
from tests.test_docs import quick_start_context


def test_the_readme_shows_this_context():
    assert quick_start_context() == SINGLE_ACCOUNT_CONTEXT


def test_only_the_stack_s_own_job_role_is_granted(checked_templates):
    t = checked_templates["single-account"]
    statements = [s for r in t["Resources"].values()
                  if r["Type"] in ("AWS::SQS::QueuePolicy", "AWS::S3::BucketPolicy")
                  for s in r["Properties"]["PolicyDocument"]["Statement"]]
    principals = [s.get("Principal") for s in statements if s.get("Effect") == "Allow"]
    # Only services (S3 logging, SNS) are allowed in; no account, role or root of any account.
    assert principals and all(set(p) == {"Service"} for p in principals), principals
    assert not [s for s in statements if str(s.get("Sid", "")).startswith(("CrossAccountRead", "AllowConsumer"))]


def test_outputs_carry_the_region_and_the_glue_database(checked_templates):
    outputs = checked_templates["single-account"]["Outputs"]
    assert outputs["Region"]["Value"] == {"Ref": "AWS::Region"}
    consumers = json.dumps(outputs["Consumers"]["Value"])
    assert '\\"icebergGlueDatabase\\":\\"orders_lake\\"' in consumers


def test_deploy_md_shows_the_same_context():
    import re

    from tests.test_docs import REPO

    text = (REPO / "docs" / "deploy.md").read_text()
    block = re.search(r"\*\*One account\.\*\*.*?```json\n(.*?)```", text, flags=re.S).group(1)
    assert json.loads(block) == SINGLE_ACCOUNT_CONTEXT
