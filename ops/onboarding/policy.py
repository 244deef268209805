"""Pure policy logic for cross-account onboarding: build statements, merge them by Sid, revoke, diff,
and decide when a write must be refused.

No AWS calls here. Every statement onboarding writes carries a Sid in a namespace derived from the
grantee, `S3SqsOnboard<account>Acct...` or `S3SqsOnboard<account>Role<hash>...`, so revoking removes
exactly those statements and nothing that anybody else wrote.
"""
from __future__ import annotations

import copy
import difflib
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from infra import contract
from infra.contract import (
    ACCOUNT_ID_RE, CONSUMER_KEY_ACTIONS, ORG_ID_RE, QUEUE_CONSUME_ACTIONS, account_grant_conditions,
    bucket_key_contexts, key_use_through, key_use_through_queue, principal_pattern_problem, with_conditions,
)
from ops.onboarding import OnboardError

SID_PREFIX = "S3SqsOnboard"
POLICY_VERSION = "2012-10-17"

# What earlier versions wrote instead of CONSUMER_KEY_ACTIONS (the same statements, with DescribeKey): a grant
# replaces them as an upgrade, not as a hand edit, and a revoke finds them by Sid as before.
LEGACY_KMS_ACTIONS = ("kms:Decrypt", "kms:DescribeKey")

# The bucket policy's SSL-only denial that a grant makes sure of: every bucket the stack creates has one, and an
# imported bucket, whose policy the stack cannot edit, gets it from onboarding. Outside every grantee's Sid
# namespace, so no revoke ever matches it.
DENY_INSECURE_TRANSPORT_SID = "S3SqsDenyInsecureTransport"

# Earlier versions accepted user patterns in --principal-arn-like; a revoke still takes them (see for_account).
_LEGACY_PRINCIPAL_PATTERN_RE = re.compile(
    r"^arn:aws[a-z-]*:iam::(?P<account>[0-9]{12}):(?:role|user)/[A-Za-z0-9_+=,.@/*?-]{1,512}\Z")

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
    """Who gets access: one role, or a whole account (its root principal) narrowed by conditions on the
    calling principal, which every statement of the grant then carries."""

    account: str
    role_arn: str | None = None
    partition: str = "aws"
    principal_arn_like: tuple[str, ...] = ()
    principal_org_id: str | None = None

    @classmethod
    def for_account(cls, account: str, partition: str = "aws", principal_arn_like: Iterable[str] = (),
                    principal_org_id: str | None = None, require_conditions: bool = True) -> "Grantee":
        """`require_conditions` False is a revoke: it finds statements by Sid whatever they were granted with, so
        it needs no condition, and takes the user patterns earlier versions granted (it only removes)."""
        if not isinstance(account, str) or not ACCOUNT_ID_RE.match(account):
            raise PolicyError(f"--consumer-account {account!r} is not an AWS account id: use exactly 12 digits")
        patterns = tuple(dict.fromkeys(principal_arn_like))
        for pattern in patterns:
            # The rule cdk.json's accountAccess.principalArnLike follows too: roles of this account only.
            problem = principal_pattern_problem(pattern, account)
            legacy = _LEGACY_PRINCIPAL_PATTERN_RE.match(pattern)
            if problem and not (not require_conditions and legacy and legacy.group("account") == account):
                raise PolicyError(f"--principal-arn-like {problem}")
        if principal_org_id is not None and not ORG_ID_RE.match(principal_org_id):
            raise PolicyError(f"--principal-org-id {principal_org_id!r} is not an AWS Organizations id like o-a1b2c3d4e5")
        if not patterns and principal_org_id is None and require_conditions:
            # The same rule as cdk.json: an account is granted only under conditions on the caller.
            raise PolicyError(
                f"--consumer-account {account} would grant every principal of the account that its admins allow; "
                f"narrow it with --principal-arn-like 'arn:aws:iam::{account}:role/<name-pattern>' (repeatable) "
                "and/or --principal-org-id o-..., or grant one role with --consumer-role-arn"
            )
        return cls(account=account, partition=partition, principal_arn_like=patterns,
                   principal_org_id=principal_org_id)

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

    def conditions(self) -> dict:
        """The IAM conditions an account grant carries (none for a role)."""
        return account_grant_conditions(self.principal_arn_like, self.principal_org_id)

    def statement(self, sid: str, action, resource, conditions: dict | None = None) -> dict:
        """An Allow statement for this grantee, with the grantee's conditions merged into `conditions`."""
        merged = with_conditions(conditions or {}, self.conditions())
        stmt = {"Sid": sid, "Effect": "Allow", "Principal": {"AWS": self.principal}, "Action": action,
                "Resource": resource}
        if merged:
            stmt["Condition"] = merged
        return stmt

    @property
    def sid_namespace(self) -> str:
        # "Acct"/"Role" keeps one grantee's namespace from being a prefix of another's.
        kind = f"Role{_short_hash(self.role_arn)}" if self.role_arn else "Acct"
        return f"{SID_PREFIX}{self.account}{kind}"


# ---------------------------------------------------------------- statements on the owner's resources

def bucket_arn(bucket: str, partition: str = "aws") -> str:
    return f"arn:{partition}:s3:::{bucket}"


def bucket_statements(grantee: Grantee, bucket: str, prefixes: Iterable[str]) -> list[dict]:
    """One GetObject statement per prefix.

    A statement per prefix (Sid carries a hash of it) makes onboarding another prefix additive and lets
    revoke name exactly the prefixes it removes. No s3:ListBucket: the connector reads only the keys its
    queue announces.
    """
    ns, p = grantee.sid_namespace, grantee.partition
    return [grantee.statement(f"{ns}S3Get{_short_hash(prefix)}", "s3:GetObject", f"{bucket_arn(bucket, p)}/{prefix}*")
            for prefix in prefixes]


def legacy_bucket_sids(grantee: Grantee, prefixes: Iterable[str]) -> set[str]:
    """Sids earlier versions wrote for these prefixes and no longer grant (s3:ListBucket)."""
    return {f"{grantee.sid_namespace}S3List{_short_hash(prefix)}" for prefix in prefixes}


def bucket_sid_matcher(grantee: Grantee, prefixes: Iterable[str] | None) -> Callable[[str], bool]:
    """Which Sids a bucket-policy revoke removes: the named prefixes, or every prefix when none is named
    (the ListBucket statements of earlier versions included)."""
    ns = grantee.sid_namespace
    if prefixes is None:
        pattern = re.compile(rf"^{re.escape(ns)}S3(Get|List)[0-9a-f]{{8}}$")
        return lambda sid: bool(pattern.match(sid))
    prefixes = list(prefixes)
    wanted = {s["Sid"] for s in bucket_statements(grantee, "-", prefixes)} | legacy_bucket_sids(grantee, prefixes)
    return lambda sid: sid in wanted


def insecure_transport_denial(bucket: str, partition: str = "aws") -> dict:
    """Deny every request to the bucket and its objects over plain HTTP, whoever makes it: the statement the
    stack puts on the buckets it creates (and asks an imported bucket's owner to add)."""
    arn = bucket_arn(bucket, partition)
    return contract.insecure_transport_denial(DENY_INSECURE_TRANSPORT_SID, "s3:*", [arn, f"{arn}/*"])


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _is_everyone(principal) -> bool:
    return principal == "*" or (isinstance(principal, dict) and "*" in _as_list(principal.get("AWS")))


def _covers(pattern: str, arn: str) -> bool:
    """Whether a Resource entry surely covers `arn` (an ARN, or an object ARN ending in '/*'): the same ARN, '*',
    or a pattern whose only wildcard is a trailing '*' after a prefix of it. Anything cleverer is not counted."""
    if pattern in ("*", arn):
        return True
    head = pattern[:-1]
    literal = arn[:-1] if arn.endswith("/*") else arn
    return pattern.endswith("*") and not any(c in head for c in "*?") and literal.startswith(head)


def _denies_insecure_transport(stmt: dict) -> bool:
    """An unconditional-but-for-HTTP Deny of every S3 action for everyone: nothing narrower counts."""
    if stmt.get("Effect") != "Deny" or {"NotAction", "NotResource", "NotPrincipal"} & set(stmt):
        return False
    if not _is_everyone(stmt.get("Principal")):
        return False
    if not {a.lower() for a in _as_list(stmt.get("Action")) if isinstance(a, str)} & {"s3:*", "*"}:
        return False
    condition = stmt.get("Condition")
    if not isinstance(condition, dict) or list(condition) != ["Bool"] or not isinstance(condition["Bool"], dict) \
            or len(condition["Bool"]) != 1:
        return False
    ((key, value),) = condition["Bool"].items()
    return key.lower() == "aws:securetransport" and [str(v).lower() for v in _as_list(value)] == ["false"]


def has_insecure_transport_denial(doc: dict, bucket: str, partition: str = "aws") -> bool:
    """Whether the bucket policy already denies plain HTTP to everyone, on the bucket and on all its objects
    (in one statement or several, with any Sid or none)."""
    arn = bucket_arn(bucket, partition)
    covered = {target for s in statements_of(doc) if _denies_insecure_transport(s)
               for target in (arn, f"{arn}/*")
               if any(_covers(r, target) for r in _as_list(s.get("Resource")) if isinstance(r, str))}
    return covered == {arn, f"{arn}/*"}


def bucket_grant_statements(grantee: Grantee, bucket: str, prefixes: Iterable[str], current: dict) -> list[dict]:
    """What a grant makes sure the bucket policy (`current`) holds: GetObject per prefix, and the SSL-only
    denial unless an equivalent one is there already."""
    out = bucket_statements(grantee, bucket, prefixes)
    if not has_insecure_transport_denial(current, bucket, grantee.partition):
        out.append(insecure_transport_denial(bucket, grantee.partition))
    return out


def queue_statement(grantee: Grantee, queue_arn: str) -> dict:
    return grantee.statement(f"{grantee.sid_namespace}SqsConsume", list(QUEUE_CONSUME_ACTIONS), queue_arn)


# Of the consume actions, those that take messages from the queue or delete them: two accounts granted these on
# one queue compete for its messages, and each can delete the other's. sqs:GetQueueAttributes alone (a dashboard,
# an alarm, a health check) takes nothing from anybody, so it does not make an account a reader.
MESSAGE_ACTIONS = tuple(a for a in QUEUE_CONSUME_ACTIONS if a != "sqs:GetQueueAttributes")
_PRINCIPAL_ACCOUNT_RE = re.compile(r"^arn:aws[a-z-]*:(?:iam|sts)::([0-9]{12}):")
EVERYONE = "*"  # what queue_readers says for a principal "*" no condition ties to accounts


def _action_matches(pattern, action: str) -> bool:
    # IAM action names are case-insensitive, and a pattern may use * and ?.
    return isinstance(pattern, str) and fnmatch.fnmatchcase(action.lower(), pattern.lower())


def _allows_message_actions(stmt: dict) -> bool:
    if stmt.get("Effect") != "Allow":
        return False
    if "NotAction" in stmt:  # Allow everything but these
        excluded = _as_list(stmt["NotAction"])
        return any(not any(_action_matches(p, a) for p in excluded) for a in MESSAGE_ACTIONS)
    return any(_action_matches(p, a) for p in _as_list(stmt.get("Action")) for a in MESSAGE_ACTIONS)


def _principal_accounts(stmt: dict) -> set[str]:
    """The accounts whose principals an Allow statement names; EVERYONE for '*' (or NotPrincipal), unless an
    aws:PrincipalAccount condition names the accounts. Service principals are no account's."""
    if "NotPrincipal" in stmt or _is_everyone(stmt.get("Principal")):
        for op, keys in (stmt.get("Condition") or {}).items():
            if op in ("StringEquals", "StringLike") and isinstance(keys, dict):
                named = [v for k, v in keys.items() if k.lower() == "aws:principalaccount"]
                if named and all(isinstance(a, str) and ACCOUNT_ID_RE.match(a) for v in named for a in _as_list(v)):
                    return {a for v in named for a in _as_list(v)}
        return {EVERYONE}
    principal = stmt.get("Principal")
    out = set()
    for p in _as_list(principal.get("AWS")) if isinstance(principal, dict) else []:
        m = _PRINCIPAL_ACCOUNT_RE.match(p) if isinstance(p, str) else None
        if isinstance(p, str) and ACCOUNT_ID_RE.match(p):
            out.add(p)
        elif m:
            out.add(m.group(1))
    return out


def queue_readers(doc: dict | None) -> dict[str, list[str]]:
    """Accounts a queue policy lets receive or delete messages -> the statements that do (their Sids), in order."""
    out: dict[str, list[str]] = {}
    for i, stmt in enumerate(statements_of(doc or {})):
        if _allows_message_actions(stmt):
            for account in sorted(_principal_accounts(stmt)):
                out.setdefault(account, []).append(stmt.get("Sid") if isinstance(stmt.get("Sid"), str)
                                                   else f"statement {i + 1} (no Sid)")
    return out


def other_queue_readers(doc: dict | None, grantee: Grantee, declared: dict[str, str] | None = None) -> dict[str, str]:
    """Accounts other than the grantee's that already consume the queue -> how we know: the queue policy
    (`doc`), and `declared`, what cdk.json or the stack's outputs say about the consumer whose queue it is."""
    out = {account: f"queue policy statement {', '.join(sids)}"
           for account, sids in queue_readers(doc).items() if account != grantee.account}
    for account, why in (declared or {}).items():
        if account != grantee.account:
            out[account] = f"{out[account]}; {why}" if account in out else why
    return dict(sorted(out.items()))


def _readers_text(readers: dict[str, str]) -> str:
    return ", ".join(f"{'every principal it allows (' + EVERYONE + ')' if a == EVERYONE else 'account ' + a} "
                     f"({why})" for a, why in readers.items())


def shared_queue_problem(queue: str, grantee: Grantee, readers: dict[str, str]) -> str:
    """Why granting `grantee` this queue needs --share-queue: one line, naming the other readers and the fix."""
    a = grantee.account
    return (f"queue {queue} is already consumed by {_readers_text(readers)}: account {a} would compete with it "
            f"for the messages and could delete messages that are not its own. Give account {a} its own consumer in "
            f"cdk.json (\"accountId\": \"{a}\"; a dry run prints the entry) and deploy, then onboard it onto that "
            "consumer's queue; or pass --share-queue if the accounts are meant to share this queue")


def shared_queue_note(queue: str, grantee: Grantee, readers: dict[str, str]) -> str:
    return (f"--share-queue: queue {queue} is shared with {_readers_text(readers)}; account {grantee.account} "
            "will compete with it for the messages")


def topic_subscribe_sid(grantee: Grantee) -> str:
    """The sns:Subscribe statement earlier versions put on the topic policy; revoke still removes it."""
    return f"{grantee.sid_namespace}SnsSubscribe"


def subscription(queue_arn: str, prefixes: Iterable[str]) -> dict:
    """The owner-made subscription of the consumer's queue to the topic, with a body filter on its prefixes.

    The owner makes it, rather than granting sns:Subscribe: SNS has no condition key for a filter policy,
    so a consumer allowed to subscribe would get every event of the bucket, not just its prefixes.
    """
    prefixes = list(dict.fromkeys(prefixes))
    doc = {"Protocol": "sqs", "Endpoint": queue_arn, "RawMessageDelivery": "true"}
    if "" not in prefixes:
        doc["FilterPolicyScope"] = "MessageBody"
        doc["FilterPolicy"] = {"Records": {"s3": {"object": {"key": [{"prefix": p} for p in prefixes]}}}}
    return doc


def kms_statements(grantee: Grantee, region: str, *, queue_arn: str | None, bucket_arns: Iterable[str]) -> list[dict]:
    """Decrypt through SQS for the one queue, and through S3 only for buckets the key encrypts: the conditions the
    stack's own consumer grants carry (infra.contract).

    In a key policy, Resource "*" means "this key". ViaService keeps each grant to one service, and the
    encryption context to the named queue or buckets.
    """
    ns, out = grantee.sid_namespace, []
    if queue_arn:
        out.append(grantee.statement(f"{ns}KmsSqs", list(CONSUMER_KEY_ACTIONS), "*",
                                     key_use_through_queue(region, queue_arn)))
    buckets = sorted(bucket_arns)
    if buckets:
        out.append(grantee.statement(f"{ns}KmsS3", list(CONSUMER_KEY_ACTIONS), "*",
                                     key_use_through("s3", region, sorted(bucket_key_contexts(buckets)))))
    return out


def legacy_kms_statements(statements: Iterable[dict]) -> list[dict]:
    """The same statements as earlier versions wrote them: with kms:DescribeKey, and the S3 encryption context
    under ArnLike rather than StringLike (the same ARNs match either). Found in a key policy, they are replaced by
    a grant without counting as a hand edit."""
    out = []
    for stmt in statements:
        forms = [stmt]
        if "StringLike" in stmt.get("Condition", {}):
            condition = {op: dict(keys) for op, keys in stmt["Condition"].items() if op != "StringLike"}
            condition.setdefault("ArnLike", {}).update(stmt["Condition"]["StringLike"])
            forms.append({**stmt, "Condition": condition})
        out += forms[1:] + [{**form, "Action": list(LEGACY_KMS_ACTIONS)} for form in forms]
    return out


def kms_sid_matcher(grantee: Grantee) -> Callable[[str], bool]:
    """Every key-policy statement onboarding wrote for this grantee, the single one of earlier versions too."""
    ns = grantee.sid_namespace
    return lambda sid: sid in {f"{ns}KmsSqs", f"{ns}KmsS3", f"{ns}KmsDecrypt"}


def key_encrypts_bucket(encryption: dict | None, key_arn: str, key_aliases: Iterable[str] = ()) -> bool:
    """Whether a bucket's default encryption (GetBucketEncryption's configuration) names this key."""
    key_id = key_arn.rsplit("/", 1)[-1]
    names = {key_arn, key_id, *key_aliases}
    for rule in (encryption or {}).get("Rules", []):
        default = rule.get("ApplyServerSideEncryptionByDefault", {})
        if default.get("SSEAlgorithm", "").startswith("aws:kms") and default.get("KMSMasterKeyID") in names:
            return True
    return False


# ---------------------------------------------------------------- what the consumer attaches on its side

def consumer_role_policy(
    *, partition: str, buckets: list[str], prefixes: list[str], queue_arn: str | None, kms_key_arn: str | None,
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
    if queue_arn:
        statements.append({
            "Sid": "ConsumeSourceQueue", "Effect": "Allow", "Action": list(QUEUE_CONSUME_ACTIONS), "Resource": queue_arn,
        })
    if kms_key_arn:
        # Through SQS and S3 only, as the key policy grants it: in the key's own account this policy alone
        # decides, and the consumer never calls KMS itself.
        region = kms_key_arn.split(":")[3]
        statements.append({
            "Sid": "DecryptSourceData", "Effect": "Allow", "Action": list(CONSUMER_KEY_ACTIONS),
            "Resource": kms_key_arn,
            "Condition": {"StringEquals": {"kms:ViaService": [f"sqs.{region}.amazonaws.com",
                                                              f"s3.{region}.amazonaws.com"]}},
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
    if isinstance(value, str) and ACCOUNT_ID_RE.match(value):
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
    """What one policy document should become. after None means: delete the policy (nothing left in it).

    conflicts: Sids of onboarding's own statements that exist with other content than this run would write
    (edited by hand, or granted with other flags); replacing them needs --force."""

    before: dict | None
    after: dict | None
    conflicts: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return not same_document(self.before, self.after)


def conflicting_sids(doc: dict, desired: list[dict], superseded: Iterable[dict] = ()) -> tuple[str, ...]:
    """Sids of `desired` present with other content; not those present exactly as `superseded` (an earlier
    version's form of the statement), which a grant upgrades."""
    present = {s.get("Sid"): s for s in statements_of(doc) if isinstance(s.get("Sid"), str)}
    old = list(superseded)
    return tuple(s["Sid"] for s in desired if s["Sid"] in present and not equivalent(present[s["Sid"]], s)
                 and not any(o.get("Sid") == s["Sid"] and equivalent(present[s["Sid"]], o) for o in old))


def plan_grant(before_text: str | None, desired: list[dict], where: str,
               obsolete: Callable[[str], bool] | None = None, superseded: Iterable[dict] = ()) -> Plan:
    """Merge `desired` in; statements of ours that `obsolete` names (what earlier versions granted) go, and
    those present exactly as `superseded` says earlier versions wrote them are replaced without a conflict."""
    before = parse_policy(before_text, where)
    after = merge_statements(before, desired, where)
    if obsolete is not None:
        after = remove_statements(after, obsolete)
    return Plan(None if not before_text else before, after, conflicting_sids(before, desired, superseded))


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


# ---------------------------------------------------------------- when to refuse

def stack_owned(plan: Plan, *, revoke: bool, policy_owner: str | None) -> bool:
    """Whether this grant writes into a policy a CloudFormation stack's template holds: the next deploy would drop
    it, so the lasting grant is the consumer's cdk.json entry."""
    return bool(policy_owner) and plan.changed and not revoke


def refusals(plan: Plan, label: str, *, revoke: bool, policy_owner: str | None) -> list[str]:
    """Why writing this plan needs --force (empty: it does not). A revoke only ever removes onboarding's own
    statements, so it is never refused."""
    if revoke or not plan.changed:
        return []
    out = []
    if plan.conflicts:
        out.append(
            f"{label}: onboarding's own statement(s) {', '.join(plan.conflicts)} differ from what this run would "
            "write (edited by hand, or granted with other flags); the diff shows both. Re-run with --force to "
            "replace them, or --revoke first"
        )
    if stack_owned(plan, revoke=revoke, policy_owner=policy_owner):
        out.append(
            f"{label} is part of CloudFormation stack {policy_owner}'s template: the next deploy that updates it "
            "puts the template's version back and drops this grant. Add the printed cdk.json entry and deploy "
            "instead, or re-run with --force to grant now until then"
        )
    return out
