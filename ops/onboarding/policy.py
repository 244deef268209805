"""Pure policy logic for cross-account onboarding: build statements, merge them by Sid, revoke, diff.

No AWS calls here. Every statement onboarding writes carries a Sid in a namespace derived from the
grantee, `S3SqsOnboard<account>Acct...` or `S3SqsOnboard<account>Role<hash>...`, so revoking removes
exactly those statements and nothing that anybody else wrote.
"""
from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from infra.contract import QUEUE_CONSUME_ACTIONS
from ops.onboarding import OnboardError

SID_PREFIX = "S3SqsOnboard"
POLICY_VERSION = "2012-10-17"

KMS_ACTIONS = ("kms:Decrypt", "kms:DescribeKey")

ACCOUNT_RE = re.compile(r"^[0-9]{12}\Z")
ROLE_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):iam::([0-9]{12}):role/([A-Za-z0-9_+=,.@/-]{1,512})\Z")


class PolicyError(OnboardError, ValueError):
    """An existing policy cannot be merged safely, or the input is invalid."""


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def partition_for_region(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


@dataclass(frozen=True)
class Grantee:
    """Who gets access: a whole account (its root principal) or one role in it."""

    account: str
    role_arn: str | None = None
    partition: str = "aws"

    @classmethod
    def for_account(cls, account: str, partition: str = "aws") -> "Grantee":
        if not isinstance(account, str) or not ACCOUNT_RE.match(account):
            raise PolicyError(f"--consumer-account {account!r} is not an AWS account id: use exactly 12 digits")
        return cls(account=account, partition=partition)

    @classmethod
    def for_role(cls, role_arn: str) -> "Grantee":
        m = ROLE_ARN_RE.match(role_arn or "")
        if not m:
            raise PolicyError(
                f"--consumer-role-arn {role_arn!r} is not an IAM role ARN: "
                "expected arn:aws:iam::<12-digit account>:role/<name>"
            )
        return cls(account=m.group(2), role_arn=role_arn, partition=m.group(1))

    @property
    def principal(self) -> str:
        return self.role_arn or f"arn:{self.partition}:iam::{self.account}:root"

    @property
    def sid_namespace(self) -> str:
        # "Acct"/"Role" keeps one grantee's namespace from being a prefix of another's.
        kind = f"Role{_short_hash(self.role_arn)}" if self.role_arn else "Acct"
        return f"{SID_PREFIX}{self.account}{kind}"


# ---------------------------------------------------------------- statements on the owner's resources

def bucket_arn(bucket: str, partition: str = "aws") -> str:
    return f"arn:{partition}:s3:::{bucket}"


def bucket_statements(grantee: Grantee, bucket: str, prefixes: Iterable[str]) -> list[dict]:
    """One GetObject and one prefix-limited ListBucket statement per prefix.

    A statement per prefix (Sid carries a hash of it) makes onboarding another prefix additive and lets
    revoke name exactly the prefixes it removes.
    """
    ns, p = grantee.sid_namespace, grantee.partition
    out: list[dict] = []
    for prefix in prefixes:
        h = _short_hash(prefix)
        out.append({
            "Sid": f"{ns}S3Get{h}",
            "Effect": "Allow",
            "Principal": {"AWS": grantee.principal},
            "Action": "s3:GetObject",
            "Resource": f"{bucket_arn(bucket, p)}/{prefix}*",
        })
        out.append({
            "Sid": f"{ns}S3List{h}",
            "Effect": "Allow",
            "Principal": {"AWS": grantee.principal},
            "Action": "s3:ListBucket",
            "Resource": bucket_arn(bucket, p),
            "Condition": {"StringLike": {"s3:prefix": f"{prefix}*"}},
        })
    return out


def bucket_sid_matcher(grantee: Grantee, prefixes: Iterable[str] | None) -> Callable[[str], bool]:
    """Which Sids a bucket-policy revoke removes: the named prefixes, or every prefix when none is named."""
    ns = grantee.sid_namespace
    if prefixes is None:
        pattern = re.compile(rf"^{re.escape(ns)}S3(Get|List)[0-9a-f]{{8}}$")
        return lambda sid: bool(pattern.match(sid))
    wanted = {s["Sid"] for s in bucket_statements(grantee, "-", prefixes)}
    return lambda sid: sid in wanted


def queue_statement(grantee: Grantee, queue_arn: str) -> dict:
    return {
        "Sid": f"{grantee.sid_namespace}SqsConsume",
        "Effect": "Allow",
        "Principal": {"AWS": grantee.principal},
        "Action": list(QUEUE_CONSUME_ACTIONS),
        "Resource": queue_arn,
    }


def topic_statement(grantee: Grantee, topic_arn: str) -> dict:
    # Only SQS endpoints in the consumer's own account may be subscribed.
    return {
        "Sid": f"{grantee.sid_namespace}SnsSubscribe",
        "Effect": "Allow",
        "Principal": {"AWS": grantee.principal},
        "Action": "sns:Subscribe",
        "Resource": topic_arn,
        "Condition": {
            "StringEquals": {"sns:Protocol": "sqs"},
            "StringLike": {"sns:Endpoint": f"arn:{grantee.partition}:sqs:*:{grantee.account}:*"},
        },
    }


def kms_statement(grantee: Grantee, region: str, via_services: Iterable[str]) -> dict:
    # In a key policy, Resource "*" means "this key". ViaService keeps the grant to reads through S3/SQS.
    services = sorted({f"{svc}.{region}.amazonaws.com" for svc in via_services})
    stmt = {
        "Sid": f"{grantee.sid_namespace}KmsDecrypt",
        "Effect": "Allow",
        "Principal": {"AWS": grantee.principal},
        "Action": list(KMS_ACTIONS),
        "Resource": "*",
    }
    if services:
        stmt["Condition"] = {"StringEquals": {"kms:ViaService": services if len(services) > 1 else services[0]}}
    return stmt


# ---------------------------------------------------------------- what the consumer attaches on its side

def consumer_role_policy(
    *, partition: str, buckets: list[str], prefixes: list[str], queue_arn: str | None,
    topic_arn: str | None, kms_key_arn: str | None,
) -> dict:
    """The identity policy for the consumer's own role: cross-account access needs both sides to allow."""
    statements: list[dict] = []
    if buckets:
        statements.append({
            "Sid": "ReadSourceObjects",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": [f"{bucket_arn(b, partition)}/{p}*" for b in buckets for p in prefixes],
        })
        statements.append({
            "Sid": "ListSourcePrefixes",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": [bucket_arn(b, partition) for b in buckets],
            "Condition": {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}},
        })
    if queue_arn:
        statements.append({
            "Sid": "ConsumeSourceQueue", "Effect": "Allow", "Action": list(QUEUE_CONSUME_ACTIONS), "Resource": queue_arn,
        })
    if topic_arn:
        statements.append({
            "Sid": "SubscribeToSourceTopic", "Effect": "Allow", "Action": "sns:Subscribe", "Resource": topic_arn,
        })
    if kms_key_arn:
        statements.append({
            "Sid": "DecryptSourceData", "Effect": "Allow", "Action": list(KMS_ACTIONS), "Resource": kms_key_arn,
        })
    return {"Version": POLICY_VERSION, "Statement": statements}


def subscriber_queue_policy(topic_arn: str, queue_arn: str) -> dict:
    """The policy the consumer puts on its own queue so the owner's topic may deliver to it."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [{
            "Sid": "AllowSourceTopic",
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
        }],
    }


# ---------------------------------------------------------------- parsing, merging, revoking, diffing

def empty_policy() -> dict:
    return {"Version": POLICY_VERSION, "Statement": []}


def parse_policy(text: str | None, where: str) -> dict:
    """Parse an existing policy; refuse anything we could not merge into without guessing."""
    if text is None or not text.strip():
        return empty_policy()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PolicyError(
            f"the existing {where} is not valid JSON ({e}); refusing to overwrite it. "
            "Repair it by hand, then run again."
        ) from None
    if not isinstance(doc, dict):
        raise PolicyError(f"the existing {where} is JSON {type(doc).__name__}, not an object; refusing to overwrite it")
    stmts = doc.get("Statement", [])
    if isinstance(stmts, dict):
        stmts = [stmts]
    if not isinstance(stmts, list) or not all(isinstance(s, dict) for s in stmts):
        raise PolicyError(f"the existing {where} has a 'Statement' that is not a list of objects; refusing to overwrite it")
    return doc


def statements_of(doc: dict) -> list[dict]:
    stmts = doc.get("Statement", [])
    return [stmts] if isinstance(stmts, dict) else list(stmts)


def _canonical_principal(value):
    if isinstance(value, str) and ACCOUNT_RE.match(value):
        return f"arn:aws:iam::{value}:root"
    return value


def canonical(value, key: str | None = None):
    """A form in which statements AWS stores differently (one-item lists, list order, bare account ids) compare equal."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [canonical(v, key) for v in value]
        if len(items) == 1:
            return items[0]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
    if key == "AWS":
        return _canonical_principal(value)
    return value


def equivalent(a, b) -> bool:
    return canonical(a) == canonical(b)


def _index_by_sid(stmts: list[dict], sids: set[str], where: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, s in enumerate(stmts):
        sid = s.get("Sid")
        if isinstance(sid, str) and sid in sids:
            if sid in index:
                raise PolicyError(
                    f"the existing {where} has two statements with Sid {sid!r}; remove the duplicate by hand"
                )
            index[sid] = i
    return index


def merge_statements(doc: dict, desired: list[dict], where: str = "policy") -> dict:
    """Return a copy of doc with each desired statement present: kept if equivalent, replaced in place if its
    Sid exists with other content, appended otherwise. Statements with other Sids are copied untouched."""
    out = copy.deepcopy(doc)
    stmts = statements_of(out)
    index = _index_by_sid(stmts, {s["Sid"] for s in desired}, where)
    for stmt in desired:
        i = index.get(stmt["Sid"])
        if i is None:
            stmts.append(copy.deepcopy(stmt))
        elif not equivalent(stmts[i], stmt):
            stmts[i] = copy.deepcopy(stmt)
    out.setdefault("Version", POLICY_VERSION)
    out["Statement"] = stmts
    return out


def remove_statements(doc: dict, match: Callable[[str], bool]) -> dict:
    """Return a copy of doc without the statements whose Sid matches; statements without a Sid always stay."""
    out = copy.deepcopy(doc)
    stmts = statements_of(out)
    kept = [s for s in stmts if not (isinstance(s.get("Sid"), str) and match(s["Sid"]))]
    if len(kept) != len(stmts):
        out["Statement"] = kept
    return out


def has_statements(doc: dict, desired: list[dict]) -> bool:
    present = {s.get("Sid"): s for s in statements_of(doc) if isinstance(s.get("Sid"), str)}
    return all(s["Sid"] in present and equivalent(present[s["Sid"]], s) for s in desired)


def lacks_statements(doc: dict, match: Callable[[str], bool]) -> bool:
    return not any(isinstance(s.get("Sid"), str) and match(s["Sid"]) for s in statements_of(doc))


def render(doc: dict | None) -> str:
    if doc is None:
        return ""
    return json.dumps(doc, indent=2) + "\n"


def policy_diff(before: dict | None, after: dict | None, label: str) -> str:
    """Unified diff of two policy documents, as they would be written (no key sorting)."""
    lines = difflib.unified_diff(
        render(before).splitlines(keepends=True),
        render(after).splitlines(keepends=True),
        fromfile=f"{label} (current)",
        tofile=f"{label} (proposed)",
    )
    return "".join(lines)


def same_document(a: dict | None, b: dict | None) -> bool:
    return canonical(a) == canonical(b)


@dataclass(frozen=True)
class Plan:
    """What one policy document should become. after None means: delete the policy (nothing left in it)."""

    before: dict | None
    after: dict | None

    @property
    def changed(self) -> bool:
        return not same_document(self.before, self.after)


def plan_grant(before_text: str | None, desired: list[dict], where: str) -> Plan:
    before = parse_policy(before_text, where)
    after = merge_statements(before, desired, where)
    return Plan(None if not before_text else before, after)


def plan_revoke(before_text: str | None, match: Callable[[str], bool], where: str) -> Plan:
    if before_text is None or not before_text.strip():
        return Plan(None, None)
    before = parse_policy(before_text, where)
    after = remove_statements(before, match)
    if lacks_statements(before, match):
        return Plan(before, before)
    if not statements_of(after):
        return Plan(before, None)
    return Plan(before, after)
