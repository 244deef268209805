"""The AWS side of onboard-account: the four resource policies it edits, the topic subscription it makes,
and how it changes one safely.

Each policy is read, recomputed and re-read just before it is written, then read back until the write is
served: a concurrent edit by someone else is merged, never overwritten, and eventual consistency is waited
for rather than taken for an edit.
"""
from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Protocol

from botocore.exceptions import ClientError

from infra.contract import POLICY_OWNER_TAG
from ops import aws
from ops.onboarding import ConcurrentEditError, OnboardError
from ops.onboarding import policy as pm
from ops.onboarding.request import KEY_ARN_RE, Request

MAX_ATTEMPTS = 3


def clients(region: str, endpoint_url: str | None) -> dict:
    """One client per service whose resource policies onboarding edits."""
    session = aws.session(region)
    return {svc: aws.client(session, svc, endpoint_url) for svc in ("s3", "sqs", "sns", "kms")}


# ---------------------------------------------------------------- policy stores

class PolicyStore(Protocol):
    """Where one policy document lives: its text (None: there is none), and how to replace it (None: remove it)."""

    label: str

    def read(self) -> str | None: ...

    def write(self, doc: dict | None) -> None: ...

    def policy_owner(self) -> str | None:
        """The stack whose template holds this policy (its POLICY_OWNER_TAG), or None."""


def _aws_error(e: ClientError, what: str, flag: str) -> OnboardError:
    code = aws.error_code(e)
    if code in ("AccessDenied", "AccessDeniedException", "AuthorizationError"):
        return OnboardError(f"access denied on {what}: run with credentials of the data-owner account ({code})")
    return OnboardError(f"{what}: {code or type(e).__name__}: {e}. Check {flag}.")


@dataclass(frozen=True)
class _Words:
    """How onboarding speaks of one kind of resource policy; `{name}` is the resource as its flag names it."""

    flag: str  # the flag that named the resource
    missing_codes: tuple[str, ...]  # the AWS error codes for "no such resource"
    label: str
    missing: str  # the operator's words for "the resource does not exist"


class _ResourcePolicy(ABC):
    """What the four stores share: a read whose AWS errors say which flag to check, and the owner's tag."""

    words: _Words

    def __init__(self, client, name: str) -> None:
        self.client = client
        self.name = name

    @property
    def label(self) -> str:
        return self.words.label.format(name=self.name)

    @abstractmethod
    def _read(self) -> str | None: ...

    @abstractmethod
    def write(self, doc: dict | None) -> None: ...

    @abstractmethod
    def _tags(self) -> dict[str, str]: ...

    def read(self) -> str | None:
        try:
            return self._read()
        except ClientError as e:
            if aws.error_code(e) in self.words.missing_codes:
                raise OnboardError(f"{self.words.missing.format(name=self.name)}: check {self.words.flag}") from None
            raise _aws_error(e, self.label, self.words.flag) from None

    def policy_owner(self) -> str | None:
        try:
            return self._tags().get(POLICY_OWNER_TAG)
        except ClientError as e:
            if aws.error_code(e) in ("NoSuchTagSet", "NoSuchTagSetError"):
                return None
            raise _aws_error(e, f"tags of {self.label}", self.words.flag) from None


class BucketPolicyStore(_ResourcePolicy):
    words = _Words("--bucket", ("NoSuchBucket",), "bucket policy of s3://{name}",
                   "bucket {name!r} does not exist (or is in another partition)")

    def _read(self) -> str | None:
        try:
            return self.client.get_bucket_policy(Bucket=self.name)["Policy"]
        except ClientError as e:
            if aws.error_code(e) == "NoSuchBucketPolicy":
                return None
            raise

    def write(self, doc: dict | None) -> None:
        if doc is None:
            self.client.delete_bucket_policy(Bucket=self.name)
        else:
            self.client.put_bucket_policy(Bucket=self.name, Policy=json.dumps(doc))

    def _tags(self) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in self.client.get_bucket_tagging(Bucket=self.name)["TagSet"]}


class QueuePolicyStore(_ResourcePolicy):
    words = _Words("--queue-url", aws.NONEXISTENT_QUEUE, "queue policy of {name}", "queue {name} does not exist")
    queue_arn = ""  # learnt with the policy: the queue's own statement names it

    def _read(self) -> str | None:
        attrs = self.client.get_queue_attributes(QueueUrl=self.name,
                                                 AttributeNames=["Policy", "QueueArn"])["Attributes"]
        self.queue_arn = attrs["QueueArn"]
        return attrs.get("Policy") or None

    def write(self, doc: dict | None) -> None:
        self.client.set_queue_attributes(QueueUrl=self.name, Attributes={"Policy": json.dumps(doc) if doc else ""})

    def _tags(self) -> dict[str, str]:
        return self.client.list_queue_tags(QueueUrl=self.name).get("Tags", {})


class TopicPolicyStore(_ResourcePolicy):
    words = _Words("--topic-arn", ("NotFound", "NotFoundException"), "topic policy of {name}",
                   "topic {name} does not exist")

    def _read(self) -> str | None:
        return self.client.get_topic_attributes(TopicArn=self.name)["Attributes"].get("Policy") or None

    def write(self, doc: dict | None) -> None:
        # A topic always has a policy; an empty statement list is as close to "none" as SNS allows.
        self.client.set_topic_attributes(TopicArn=self.name, AttributeName="Policy",
                                         AttributeValue=json.dumps(doc or pm.empty_policy()))

    def _tags(self) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in self.client.list_tags_for_resource(ResourceArn=self.name)["Tags"]}


class KeyPolicyStore(_ResourcePolicy):
    words = _Words("--kms-key-arn", ("NotFoundException",), "key policy of {name}", "KMS key {name} does not exist")

    def _read(self) -> str | None:
        return self.client.get_key_policy(KeyId=self.name, PolicyName="default")["Policy"]

    def write(self, doc: dict | None) -> None:
        if doc is None:
            raise OnboardError(f"refusing to leave {self.label} without statements: that would lock the key")
        self.client.put_key_policy(KeyId=self.name, PolicyName="default", Policy=json.dumps(doc))

    def _tags(self) -> dict[str, str]:
        return {t["TagKey"]: t["TagValue"] for t in self.client.list_resource_tags(KeyId=self.name).get("Tags", [])}

    def aliases(self) -> list[str]:
        return [x for a in self.client.list_aliases(KeyId=self.name).get("Aliases", [])
                for x in (a.get("AliasName"), a.get("AliasArn")) if x]


_PENDING = "PendingConfirmation"


@dataclass
class SubscriptionStore:
    """The owner-made subscription of the consumer's queue to the topic, as a small document of its settings.

    read() gives None when there is none, and {"Protocol", "Endpoint", PendingConfirmation: true} while the
    consumer has not confirmed it (its settings cannot be read until then)."""

    sns: object
    topic_arn: str
    queue_arn: str

    @property
    def label(self) -> str:
        return f"subscription of {self.queue_arn} to {self.topic_arn}"

    def _find(self) -> str | None:
        try:
            for page in self.sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=self.topic_arn):
                for sub in page["Subscriptions"]:
                    if sub.get("Protocol") == "sqs" and sub.get("Endpoint") == self.queue_arn:
                        return sub["SubscriptionArn"]
        except ClientError as e:
            if aws.error_code(e) in TopicPolicyStore.words.missing_codes:
                raise OnboardError(f"topic {self.topic_arn} does not exist: check --topic-arn") from None
            raise _aws_error(e, self.label, "--topic-arn") from None
        return None

    def read(self) -> str | None:
        arn = self._find()
        if arn is None:
            return None
        if arn == _PENDING:
            return json.dumps({"Protocol": "sqs", "Endpoint": self.queue_arn, _PENDING: True})
        attrs = self.sns.get_subscription_attributes(SubscriptionArn=arn)["Attributes"]
        doc = {"Protocol": "sqs", "Endpoint": self.queue_arn, "RawMessageDelivery": attrs.get("RawMessageDelivery", "false")}
        filter_policy = json.loads(attrs.get("FilterPolicy") or "{}")
        if filter_policy:  # "{}" is how SNS shows a removed filter
            doc["FilterPolicyScope"] = attrs.get("FilterPolicyScope", "MessageAttributes")
            doc["FilterPolicy"] = filter_policy
        return json.dumps(doc)

    def write(self, doc: dict | None) -> None:
        arn = self._find()
        if arn == _PENDING:
            raise OnboardError(
                f"{self.label} is pending confirmation by the consumer, so it cannot be changed or removed yet; "
                "SNS drops an unconfirmed subscription after 3 days"
            )
        if doc is None:
            if arn:
                self.sns.unsubscribe(SubscriptionArn=arn)
            return
        attributes = {"RawMessageDelivery": doc["RawMessageDelivery"]}
        if "FilterPolicy" in doc:
            attributes["FilterPolicyScope"] = doc["FilterPolicyScope"]
            attributes["FilterPolicy"] = json.dumps(doc["FilterPolicy"])
        if arn is None:
            self.sns.subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=self.queue_arn,
                               Attributes=attributes, ReturnSubscriptionArn=True)
            return
        for name in ("RawMessageDelivery", "FilterPolicyScope", "FilterPolicy"):
            value = attributes.get(name, "{}" if name == "FilterPolicy" else None)
            if value is not None:
                self.sns.set_subscription_attributes(SubscriptionArn=arn, AttributeName=name, AttributeValue=value)

    def policy_owner(self) -> str | None:
        return None  # a subscription is not part of any template here


# ---------------------------------------------------------------- read, compute, re-read, write

@dataclass
class Target:
    """One policy document to change: where it lives, how to compute its new form, how to check the result."""

    store: PolicyStore
    compute: Callable[[str | None], pm.Plan]
    verify: Callable[[dict], bool]


@dataclass
class Outcome:
    label: str
    changed: bool
    written: bool
    diff: str


def _same_text(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    try:
        return pm.same_document(json.loads(a) if a else None, json.loads(b) if b else None)
    except (TypeError, json.JSONDecodeError):
        return False


@dataclass
class Prepared:
    target: Target
    before_text: str | None
    plan: pm.Plan
    policy_owner: str | None = None  # the stack whose template holds this policy

    @property
    def label(self) -> str:
        return self.target.store.label


def prepare(target: Target) -> Prepared:
    """Read and compute; raises on a malformed policy or a missing resource, before anything is written."""
    before_text = target.store.read()
    owner = target.store.policy_owner() if hasattr(target.store, "policy_owner") else None
    return Prepared(target, before_text, target.compute(before_text), owner)


# Policy changes propagate eventually (SQS documents up to 60 s): reading the old version back right after a
# write is not somebody else's edit. Wait this long, in steps, before calling it either way.
SETTLE_WAITS = (0, 1, 2, 4, 8, 15, 30)
_VERIFIED, _STALE = object(), object()


def _read_back(target: Target, before_text: str | None, sleep) -> object:
    """_VERIFIED once our statements are served; the text served when it is someone else's newer version;
    _STALE if only the old version is ever served."""
    for wait in SETTLE_WAITS:
        if wait:
            sleep(wait)
        text = target.store.read()
        doc = pm.parse_policy(text, target.store.label) if text else pm.empty_policy()
        if target.verify(doc):
            return _VERIFIED
        if not _same_text(text, before_text):
            return text
    return _STALE


def commit(p: Prepared, log: Callable[[str], None], attempts: int = MAX_ATTEMPTS, sleep=time.sleep,
           force: bool = False) -> Outcome:
    """Re-read just before writing and start over if someone else changed the policy since it was read,
    then read back to confirm. Gives up after `attempts`. A recomputed plan that would replace onboarding's
    own statements as someone just edited them is refused unless `force`."""
    target, before_text, plan = p.target, p.before_text, p.plan
    label = p.label
    diff = pm.policy_diff(plan.before, plan.after, label)
    if not plan.changed:
        return Outcome(label, False, False, diff)
    for attempt in range(1, attempts + 1):
        current = target.store.read()
        if not _same_text(current, before_text):
            log(f"{label} changed since it was read; recomputing from the new version (attempt {attempt})")
            before_text = current
            plan = target.compute(before_text)
            diff = pm.policy_diff(plan.before, plan.after, label)
            if not plan.changed:
                return Outcome(label, False, False, diff)
            if plan.conflicts and not force:
                raise OnboardError("; ".join(pm.refusals(plan, label, revoke=False, policy_owner=None)))
            continue
        target.store.write(plan.after)
        written_text = _read_back(target, before_text, sleep)
        if written_text is _VERIFIED:
            return Outcome(label, True, True, diff)
        if written_text is _STALE:
            raise OnboardError(
                f"{label}: the write was accepted but the old policy is still served after "
                f"{sum(SETTLE_WAITS):.0f}s; check it by hand, then run again (a second run only adds what is missing)"
            )
        log(f"{label} was overwritten right after our write; merging again (attempt {attempt})")
        before_text = written_text
        plan = target.compute(before_text)
        diff = pm.policy_diff(plan.before, plan.after, label)
    raise ConcurrentEditError(
        f"{label} kept changing while we tried to update it ({attempts} attempts); someone else is editing it. "
        "Nothing of theirs was dropped. Run again once they are done."
    )



# ---------------------------------------------------------------- targets for one request

def build_targets(req: Request, clients: dict) -> list[Target]:
    g = req.grantee
    targets: list[Target] = []

    for bucket in req.buckets:
        store = BucketPolicyStore(clients["s3"], bucket)
        if req.revoke:
            match = pm.bucket_sid_matcher(g, req.prefixes)
            targets.append(_revoke_target(store, match))
        else:
            # The GetObject statements, and the SSL-only denial unless the policy has one already. A revoke (above)
            # never takes that denial away: it guards every reader of the bucket, not this grantee's access, and
            # others' statements may count on it; ending a grant needs no plain-HTTP access.
            legacy = pm.legacy_bucket_sids(g, req.prefixes)
            targets.append(_grant_target(
                store, lambda doc, b=bucket: pm.bucket_grant_statements(g, b, req.prefixes, doc),
                obsolete=legacy.__contains__))

    if req.queue_url:
        qstore = QueuePolicyStore(clients["sqs"], req.queue_url)
        if req.revoke:
            targets.append(_revoke_target(qstore, _sid_is(pm.queue_statement(g, "-")["Sid"])))
        else:
            # The ARN comes from the queue itself, read together with the policy.
            targets.append(_grant_target(qstore, lambda _doc, s=qstore: [pm.queue_statement(g, s.queue_arn)]))

    if req.topic_arn:
        sstore = SubscriptionStore(clients["sns"], req.topic_arn, req.subscriber_queue_arn)
        if req.revoke:
            # (Read back, "none" arrives as an empty policy document.)
            targets.append(Target(sstore, lambda text: pm.Plan(_doc(text), None), lambda doc: "Endpoint" not in doc))
            # What earlier versions granted instead: sns:Subscribe on the topic policy.
            tstore = TopicPolicyStore(clients["sns"], req.topic_arn)
            targets.append(_revoke_target(tstore, _sid_is(pm.topic_subscribe_sid(g))))
        else:
            targets.append(_subscription_target(sstore, pm.subscription(req.subscriber_queue_arn, req.prefixes)))

    if req.kms_key_arn:
        kstore = KeyPolicyStore(clients["kms"], req.kms_key_arn)
        if req.revoke:
            targets.append(_revoke_target(kstore, pm.kms_sid_matcher(g)))
        else:
            key_region = KEY_ARN_RE.match(req.kms_key_arn).group(2)
            encrypted = buckets_under_key(clients["s3"], req.buckets, req.kms_key_arn, kstore.aliases())
            stmts = pm.kms_statements(g, key_region, queue_arn=req.queue_arn,
                                      bucket_arns=[pm.bucket_arn(b, req.partition) for b in encrypted])
            if stmts:
                # Statements earlier versions wrote with kms:DescribeKey are replaced, as an upgrade, not a conflict.
                targets.append(_grant_target(kstore, lambda _doc: stmts, superseded=pm.legacy_kms_statements(stmts)))
    return targets


def buckets_under_key(s3, buckets: list[str], key_arn: str, aliases: list[str]) -> list[str]:
    """The buckets whose default encryption is this key: only reads from those need kms:Decrypt through S3."""
    out = []
    for bucket in buckets:
        try:
            encryption = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
        except ClientError as e:
            if aws.error_code(e) == "ServerSideEncryptionConfigurationNotFoundError":
                continue
            raise _aws_error(e, f"default encryption of s3://{bucket}", "--bucket") from None
        if pm.key_encrypts_bucket(encryption, key_arn, aliases):
            out.append(bucket)
    return out


def _doc(text: str | None) -> dict | None:
    return json.loads(text) if text else None


def _subscription_target(store: SubscriptionStore, desired: dict) -> Target:
    def compute(text: str | None) -> pm.Plan:
        before = _doc(text)
        if before and before.get(_PENDING):
            return pm.Plan(before, before)  # nothing to see or change until the consumer confirms it
        conflicts = ("subscription",) if before is not None and not pm.same_document(before, desired) else ()
        return pm.Plan(before, desired, conflicts)

    def verify(doc: dict) -> bool:
        return bool(doc.get(_PENDING)) or pm.same_document(doc, desired)

    return Target(store, compute, verify)


def _sid_is(sid: str) -> Callable[[str], bool]:
    return lambda s: s == sid


def _grant_target(store: PolicyStore, desired_for: Callable[[dict], list[dict]],
                  obsolete: Callable[[str], bool] | None = None, superseded: list[dict] = ()) -> Target:
    """`desired_for` gives the statements a policy document must hold: they may depend on what it holds already
    (the bucket's SSL-only denial is added only where no equivalent one is)."""
    def compute(text: str | None) -> pm.Plan:
        desired = desired_for(pm.parse_policy(text, store.label))
        return pm.plan_grant(text, desired, store.label, obsolete, superseded)

    def verify(doc: dict) -> bool:
        return pm.has_statements(doc, desired_for(doc))

    return Target(store, compute, verify)


def _revoke_target(store: PolicyStore, match: Callable[[str], bool]) -> Target:
    return Target(store, lambda text: pm.plan_revoke(text, match, store.label), lambda doc: pm.lacks_statements(doc, match))


