"""The AWS side of onboard-account: the four resource policies it edits, and how it changes one safely.

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


def _aws_error(e: ClientError, what: str, flag: str) -> OnboardError:
    code = aws.error_code(e)
    if code in ("AccessDenied", "AccessDeniedException", "AuthorizationError"):
        return OnboardError(f"access denied on {what}: run with credentials of the data-owner account ({code})")
    return OnboardError(f"{what}: {code or type(e).__name__}: {e}. Check {flag}.")


class _ResourcePolicy(ABC):
    """What the four stores share: a read whose AWS errors say which flag to check."""

    flag: str  # the flag that named the resource
    missing_codes: tuple[str, ...]  # the AWS error codes for "no such resource"

    @property
    @abstractmethod
    def label(self) -> str: ...

    @abstractmethod
    def missing(self) -> str:
        """The operator's words for "the resource does not exist"."""

    @abstractmethod
    def _read(self) -> str | None: ...

    @abstractmethod
    def write(self, doc: dict | None) -> None: ...

    def read(self) -> str | None:
        try:
            return self._read()
        except ClientError as e:
            if aws.error_code(e) in self.missing_codes:
                raise OnboardError(f"{self.missing()}: check {self.flag}") from None
            raise _aws_error(e, self.label, self.flag) from None


@dataclass
class BucketPolicyStore(_ResourcePolicy):
    s3: object
    bucket: str
    flag = "--bucket"
    missing_codes = ("NoSuchBucket",)

    @property
    def label(self) -> str:
        return f"bucket policy of s3://{self.bucket}"

    def missing(self) -> str:
        return f"bucket {self.bucket!r} does not exist (or is in another partition)"

    def _read(self) -> str | None:
        try:
            return self.s3.get_bucket_policy(Bucket=self.bucket)["Policy"]
        except ClientError as e:
            if aws.error_code(e) == "NoSuchBucketPolicy":
                return None
            raise

    def write(self, doc: dict | None) -> None:
        if doc is None:
            self.s3.delete_bucket_policy(Bucket=self.bucket)
        else:
            self.s3.put_bucket_policy(Bucket=self.bucket, Policy=json.dumps(doc))


@dataclass
class QueuePolicyStore(_ResourcePolicy):
    sqs: object
    queue_url: str
    queue_arn: str = ""  # learnt with the policy: the queue's own statement names it
    flag = "--queue-url"
    missing_codes = aws.NONEXISTENT_QUEUE

    @property
    def label(self) -> str:
        return f"queue policy of {self.queue_url}"

    def missing(self) -> str:
        return f"queue {self.queue_url} does not exist"

    def _read(self) -> str | None:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["Policy", "QueueArn"]
        )["Attributes"]
        self.queue_arn = attrs["QueueArn"]
        return attrs.get("Policy") or None

    def write(self, doc: dict | None) -> None:
        self.sqs.set_queue_attributes(QueueUrl=self.queue_url, Attributes={"Policy": json.dumps(doc) if doc else ""})


@dataclass
class TopicPolicyStore(_ResourcePolicy):
    sns: object
    topic_arn: str
    flag = "--topic-arn"
    missing_codes = ("NotFound", "NotFoundException")

    @property
    def label(self) -> str:
        return f"topic policy of {self.topic_arn}"

    def missing(self) -> str:
        return f"topic {self.topic_arn} does not exist"

    def _read(self) -> str | None:
        return self.sns.get_topic_attributes(TopicArn=self.topic_arn)["Attributes"].get("Policy") or None

    def write(self, doc: dict | None) -> None:
        # A topic always has a policy; an empty statement list is as close to "none" as SNS allows.
        self.sns.set_topic_attributes(
            TopicArn=self.topic_arn, AttributeName="Policy", AttributeValue=json.dumps(doc or pm.empty_policy())
        )


@dataclass
class KeyPolicyStore(_ResourcePolicy):
    kms: object
    key_arn: str
    flag = "--kms-key-arn"
    missing_codes = ("NotFoundException",)

    @property
    def label(self) -> str:
        return f"key policy of {self.key_arn}"

    def missing(self) -> str:
        return f"KMS key {self.key_arn} does not exist"

    def _read(self) -> str | None:
        return self.kms.get_key_policy(KeyId=self.key_arn, PolicyName="default")["Policy"]

    def write(self, doc: dict | None) -> None:
        if doc is None:
            raise OnboardError(f"refusing to leave {self.label} without statements: that would lock the key")
        self.kms.put_key_policy(KeyId=self.key_arn, PolicyName="default", Policy=json.dumps(doc))


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

    @property
    def label(self) -> str:
        return self.target.store.label


def prepare(target: Target) -> Prepared:
    """Read and compute; raises on a malformed policy or a missing resource, before anything is written."""
    before_text = target.store.read()
    return Prepared(target, before_text, target.compute(before_text))


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


def commit(p: Prepared, log: Callable[[str], None], attempts: int = MAX_ATTEMPTS, sleep=time.sleep) -> Outcome:
    """Re-read just before writing and start over if someone else changed the policy since it was read,
    then read back to confirm. Gives up after `attempts`."""
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


def update_policy(target: Target, apply: bool, log: Callable[[str], None], attempts: int = MAX_ATTEMPTS) -> Outcome:
    p = prepare(target)
    if not apply:
        return Outcome(p.label, p.plan.changed, False, pm.policy_diff(p.plan.before, p.plan.after, p.label))
    return commit(p, log, attempts)


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
            desired = pm.bucket_statements(g, bucket, req.prefixes)
            targets.append(_grant_target(store, lambda _t, d=desired: d))

    if req.queue_url:
        qstore = QueuePolicyStore(clients["sqs"], req.queue_url)
        if req.revoke:
            targets.append(_revoke_target(qstore, _sid_is(pm.queue_statement(g, "-")["Sid"])))
        else:
            # The ARN comes from the queue itself, read together with the policy.
            targets.append(_grant_target(qstore, lambda _t, s=qstore: [pm.queue_statement(g, s.queue_arn)]))

    if req.topic_arn:
        tstore = TopicPolicyStore(clients["sns"], req.topic_arn)
        if req.revoke:
            targets.append(_revoke_target(tstore, _sid_is(pm.topic_statement(g, "-")["Sid"])))
        else:
            targets.append(_grant_target(tstore, lambda _t: [pm.topic_statement(g, req.topic_arn)]))

    if req.kms_key_arn:
        kstore = KeyPolicyStore(clients["kms"], req.kms_key_arn)
        key_region = KEY_ARN_RE.match(req.kms_key_arn).group(2)
        services = ["s3"] + (["sqs"] if req.queue_url else [])
        stmt = pm.kms_statement(g, key_region, services)
        if req.revoke:
            targets.append(_revoke_target(kstore, _sid_is(stmt["Sid"])))
        else:
            targets.append(_grant_target(kstore, lambda _t: [stmt]))
    return targets


def _sid_is(sid: str) -> Callable[[str], bool]:
    return lambda s: s == sid


def _grant_target(store: PolicyStore, desired_for: Callable[[str | None], list[dict]]) -> Target:
    def compute(text: str | None) -> pm.Plan:
        return pm.plan_grant(text, desired_for(text), store.label)

    def verify(doc: dict) -> bool:
        return pm.has_statements(doc, desired_for(None))

    return Target(store, compute, verify)


def _revoke_target(store: PolicyStore, match: Callable[[str], bool]) -> Target:
    return Target(store, lambda text: pm.plan_revoke(text, match, store.label), lambda doc: pm.lacks_statements(doc, match))


