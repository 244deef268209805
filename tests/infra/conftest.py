"""Templates synthesized once per session, with cdk.json's context (feature flags included)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# The alarm settings of the checked-in cdk.json, which `template_dict` is synthesized with.
CDK_JSON_ALARMS = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"]["alarms"]

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_VERSION_CHECK", "1")

# An imported source bucket, a customer-managed key, event filters, a hyphenated consumer name, an
# account granted with conditions and alarm e-mails: the branches the default cdk.json example does not take.
ACCOUNT_ACCESS = {"principalArnLike": ["arn:aws:iam::123456789012:role/ingest-*"], "principalOrgId": "o-a1b2c3d4e5"}
VARIANT_CONTEXT = {
    "sourceBucket": {"mode": "import", "bucketName": "acme-landing-zone"},
    "eventFilter": {"prefix": "incoming/", "suffix": ".json"},
    "consumers": [
        {"name": "ingest", "accountId": "123456789012", "maxReceiveCount": 2, "visibilityTimeoutSeconds": 60,
         "accountAccess": ACCOUNT_ACCESS},
        {"name": "raw-events", "accountId": "210987654321", "prefix": "incoming/raw/", "maxReceiveCount": 4,
         "icebergGlueDatabase": "raw_lake"},
    ],
    "crossAccountPrincipals": ["arn:aws:iam::210987654321:role/raw-reader"],
    "kms": {"mode": "customer"},
    "emr": {"architecture": "ARM64", "maximumCapacity": {"vcpu": 8, "memoryGb": 32, "diskGb": 100},
            "idleTimeoutMinutes": 5},
    "alarms": {"dlqMessagesThreshold": 3, "oldestMessageAgeSeconds": 600, "quarantinedFilesThreshold": 5,
               "malformedRowsThreshold": 250, "periodSeconds": 60, "evaluationPeriods": 2,
               "emails": ["ops@example.com", "Team.Lead+alarms@example.org"]},
}


# The cdk.json example with a customer-managed key: the third of the contexts the static checks cover.
NEW_BUCKET_CUSTOMER_KEY_CONTEXT = {"kms": {"mode": "customer"}}

# The single-account context README.md's quick start deploys: one consumer of the deploying account.
SINGLE_ACCOUNT_CONTEXT = {"sourceBucket": {"mode": "new"},
                          "consumers": [{"name": "orders", "icebergGlueDatabase": "orders_lake"}],
                          "crossAccountPrincipals": []}

# The source cleaner on: archive into another bucket, on cdk.json's two consumers (whose prefixes overlap).
SOURCE_CLEANING_CONTEXT = {"sourceCleaning": {"cleanSource": "archive", "cleanSourceRetention": "7d",
                                              "sourceArchiveLocation": "s3://acme-archive/landing/"}}

# Every context the static checks (cdk-nag, cfn-lint, checkov) run on: overrides of cdk.json's context.
CHECKED_CONTEXTS = {
    "default": {},
    "source-cleaning": SOURCE_CLEANING_CONTEXT,
    "single-account": SINGLE_ACCOUNT_CONTEXT,
    "imported-bucket-customer-key": VARIANT_CONTEXT,
    "new-bucket-customer-key": NEW_BUCKET_CUSTOMER_KEY_CONTEXT,
}


@pytest.fixture(scope="session")
def checked_templates() -> dict[str, dict]:
    """Each checked context's synthesized template, by context name."""
    from infra.local_stand_in import synth_template

    return {name: synth_template(ctx or None) for name, ctx in CHECKED_CONTEXTS.items()}


@pytest.fixture(scope="session")
def template_dict() -> dict:
    from infra.local_stand_in import synth_template

    return synth_template()


@pytest.fixture(scope="session")
def variant_template_dict() -> dict:
    from infra.local_stand_in import synth_template

    return synth_template(VARIANT_CONTEXT)


@pytest.fixture(scope="session")
def template(template_dict):
    from aws_cdk.assertions import Template

    return Template.from_json(template_dict)


@pytest.fixture(scope="session")
def variant_template(variant_template_dict):
    from aws_cdk.assertions import Template

    return Template.from_json(variant_template_dict)
