"""The deploy shapes the IAM contract is evaluated in: cdk.json's context with these top-level keys replaced.

In every shape the consumer the scenario plays, `ingest`, reads keys under `ingest/` (cdk.json's own example
gives it the whole bucket, which covers them), so what the scenario recorded is what each shape's `ingest`
would do. The operator is the role `data-ops` of the stack's account; the second account is 210987654321.
"""
from __future__ import annotations

SUBJECT = "ingest"
KEY_PREFIX = "ingest/"
OPERATOR_ROLE = "data-ops"
OTHER_ACCOUNT = "210987654321"
ORG_ID = "o-a1b2c3d4e5"
ARCHIVE_BUCKET = "acme-archive"
IMPORTED_BUCKET = "acme-landing-zone"
GLUE_DATABASE = "lake"

CUSTOMER_KEY = {"kms": {"mode": "customer"}}
ARCHIVE = {"sourceCleaning": {"cleanSource": "archive", "cleanSourceRetention": "7d",
                              "sourceArchiveLocation": f"s3://{ARCHIVE_BUCKET}/cleaned/",
                              "operatorRoles": [OPERATOR_ROLE]}}
DELETE = {"sourceCleaning": {"cleanSource": "delete", "cleanSourceRetention": "2d", "schedule": "manual",
                             "operatorRoles": [OPERATOR_ROLE]}}


def ingest(**more) -> dict:
    return {"name": SUBJECT, "prefix": KEY_PREFIX, "maxReceiveCount": 5, **more}


def consumers(*items: dict) -> dict:
    return {"consumers": list(items), "crossAccountPrincipals": [
        p for c in items if c.get("accountId") and "accountAccess" not in c
        for p in [f"arn:aws:iam::{c['accountId']}:role/{c['name']}-reader"]]}


SAME_ACCOUNT = consumers(ingest(icebergGlueDatabase=GLUE_DATABASE), {"name": "analytics", "prefix": "analytics/"})

SHAPES: dict[str, dict] = {
    "default": {},  # cdk.json as it is: ingest (the whole bucket) and analytics, each read by a listed role
    "customer-key": CUSTOMER_KEY,
    # Where the scenario is recorded: archived a second after commit, so that its cleaner run has files to clean.
    "everything-on": {**CUSTOMER_KEY, "sourceCleaning": {**ARCHIVE["sourceCleaning"], "cleanSourceRetention": "1s"},
                      **SAME_ACCOUNT},
    "cleaning-archive-customer-key": {**CUSTOMER_KEY, **ARCHIVE},
    "cleaning-delete-customer-key": {**CUSTOMER_KEY, **DELETE},
    "imported-bucket": {"sourceBucket": {"mode": "import", "bucketName": IMPORTED_BUCKET}, **SAME_ACCOUNT},
    "cross-account-roles": {**CUSTOMER_KEY, **consumers(ingest(accountId=OTHER_ACCOUNT),
                                                        {"name": "analytics", "prefix": "analytics/"})},
    "cross-account-account-access": {**CUSTOMER_KEY, **consumers(
        ingest(accountId=OTHER_ACCOUNT, accountAccess={
            "principalArnLike": [f"arn:aws:iam::{OTHER_ACCOUNT}:role/ingest-*"], "principalOrgId": ORG_ID}),
        {"name": "analytics", "prefix": "analytics/"})},
    "same-account": SAME_ACCOUNT,
    "names-prefixing-each-other": {**CUSTOMER_KEY, **ARCHIVE, **consumers(
        ingest(icebergGlueDatabase=GLUE_DATABASE), {"name": "ingest-v2", "prefix": "ingest-v2/"})},
}
RECORDED = "everything-on"
