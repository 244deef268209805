"""Grant (or revoke) a consumer in another AWS account access to the source data.

Run by the data-owner account. It edits the bucket policy, the queue policy or the topic policy, and the
KMS key policy, merging statements by Sid (see ops/policy_merge.py). Dry run by default: it prints the
diff of every policy it would change; --apply writes them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol
from urllib.parse import urlparse

from botocore.exceptions import BotoCoreError, ClientError

from infra.contract import CONSUMER_NAME_RE, CONSUMER_NAME_RULE
from ops import policy_merge as pm
from ops.stack_outputs import OutputsError, load_outputs

MAX_ATTEMPTS = 3

BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
TOPIC_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):sns:([a-z0-9-]+):([0-9]{12}):([A-Za-z0-9_.-]{1,256})\Z")
KEY_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):kms:([a-z0-9-]+):([0-9]{12}):key/([A-Za-z0-9-]+)\Z")
FROM_OUTPUTS = "<from-outputs>"


class OnboardError(Exception):
    """A problem the operator must fix; the message says what and how."""


class ConcurrentEditError(OnboardError):
    pass


# ---------------------------------------------------------------- policy stores (AWS I/O)

class PolicyStore(Protocol):
    label: str

    def read(self) -> str | None: ...

    def write(self, doc: dict | None) -> None: ...


def _code(e) -> str:
    return e.response.get("Error", {}).get("Code", "") if hasattr(e, "response") else ""


def _aws_error(e, what: str, flag: str) -> OnboardError:
    code = _code(e)
    if code in ("AccessDenied", "AccessDeniedException", "AuthorizationError"):
        return OnboardError(f"access denied on {what}: run with credentials of the data-owner account ({code})")
    return OnboardError(f"{what}: {code or type(e).__name__}: {e}. Check {flag}.")


@dataclass
class BucketPolicyStore:
    s3: object
    bucket: str

    @property
    def label(self) -> str:
        return f"bucket policy of s3://{self.bucket}"

    def read(self) -> str | None:
        from botocore.exceptions import ClientError
        try:
            return self.s3.get_bucket_policy(Bucket=self.bucket)["Policy"]
        except ClientError as e:
            if _code(e) == "NoSuchBucketPolicy":
                return None
            if _code(e) == "NoSuchBucket":
                raise OnboardError(
                    f"bucket {self.bucket!r} does not exist (or is in another partition): check --bucket"
                ) from None
            raise _aws_error(e, self.label, "--bucket") from None

    def write(self, doc: dict | None) -> None:
        if doc is None:
            self.s3.delete_bucket_policy(Bucket=self.bucket)
        else:
            self.s3.put_bucket_policy(Bucket=self.bucket, Policy=json.dumps(doc))


@dataclass
class QueuePolicyStore:
    sqs: object
    queue_url: str
    queue_arn: str = ""

    @property
    def label(self) -> str:
        return f"queue policy of {self.queue_url}"

    def read(self) -> str | None:
        from botocore.exceptions import ClientError
        try:
            attrs = self.sqs.get_queue_attributes(
                QueueUrl=self.queue_url, AttributeNames=["Policy", "QueueArn"]
            )["Attributes"]
        except ClientError as e:
            if _code(e) in ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"):
                raise OnboardError(f"queue {self.queue_url} does not exist: check --queue-url") from None
            raise _aws_error(e, self.label, "--queue-url") from None
        self.queue_arn = attrs["QueueArn"]
        return attrs.get("Policy") or None

    def write(self, doc: dict | None) -> None:
        self.sqs.set_queue_attributes(QueueUrl=self.queue_url, Attributes={"Policy": json.dumps(doc) if doc else ""})


@dataclass
class TopicPolicyStore:
    sns: object
    topic_arn: str

    @property
    def label(self) -> str:
        return f"topic policy of {self.topic_arn}"

    def read(self) -> str | None:
        from botocore.exceptions import ClientError
        try:
            attrs = self.sns.get_topic_attributes(TopicArn=self.topic_arn)["Attributes"]
        except ClientError as e:
            if _code(e) in ("NotFound", "NotFoundException"):
                raise OnboardError(f"topic {self.topic_arn} does not exist: check --topic-arn") from None
            raise _aws_error(e, self.label, "--topic-arn") from None
        return attrs.get("Policy") or None

    def write(self, doc: dict | None) -> None:
        # A topic always has a policy; an empty statement list is as close to "none" as SNS allows.
        self.sns.set_topic_attributes(
            TopicArn=self.topic_arn, AttributeName="Policy", AttributeValue=json.dumps(doc or pm.empty_policy())
        )


@dataclass
class KeyPolicyStore:
    kms: object
    key_arn: str

    @property
    def label(self) -> str:
        return f"key policy of {self.key_arn}"

    def read(self) -> str | None:
        from botocore.exceptions import ClientError
        try:
            return self.kms.get_key_policy(KeyId=self.key_arn, PolicyName="default")["Policy"]
        except ClientError as e:
            if _code(e) in ("NotFoundException",):
                raise OnboardError(f"KMS key {self.key_arn} does not exist: check --kms-key-arn") from None
            raise _aws_error(e, self.label, "--kms-key-arn") from None

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


# ---------------------------------------------------------------- request: validated arguments

@dataclass
class Request:
    grantee: pm.Grantee
    consumer_name: str
    buckets: list[str]
    prefixes: list[str] | None  # None only for a revoke of every prefix
    queue_url: str | None
    topic_arn: str | None
    kms_key_arn: str | None
    region: str
    endpoint_url: str | None
    apply: bool
    revoke: bool
    notes: list[str] = field(default_factory=list)

    @property
    def partition(self) -> str:
        return self.grantee.partition


def _validate_queue_url(url: str) -> None:
    u = urlparse(url)
    parts = [p for p in u.path.split("/") if p]
    if u.scheme not in ("http", "https") or len(parts) != 2 or not pm.ACCOUNT_RE.match(parts[0]):
        raise OnboardError(
            f"--queue-url {url!r} is not an SQS queue URL: expected https://sqs.<region>.amazonaws.com/<account>/<name>"
        )


def _validate_prefix(prefix: str) -> None:
    if "*" in prefix or "?" in prefix:
        raise OnboardError(f"--prefix {prefix!r} contains a wildcard; give a literal key prefix such as 'landing/orders/'")
    if len(prefix) > 1024:
        raise OnboardError("--prefix is longer than an S3 key can be")


def build_request(args: argparse.Namespace, default_region: str | None) -> Request:
    notes: list[str] = []
    region = args.region or default_region
    partition = pm.partition_for_region(region or "")
    try:
        if args.consumer_role_arn:
            grantee = pm.Grantee.for_role(args.consumer_role_arn)
        else:
            grantee = pm.Grantee.for_account(args.consumer_account, partition)
    except pm.PolicyError as e:
        raise OnboardError(str(e)) from None
    if not region:
        raise OnboardError("no AWS region: pass --region (or set AWS_REGION)")

    buckets = list(args.bucket or [])
    prefixes = list(args.prefix) if args.prefix is not None else None
    queue_url = args.queue_url
    topic_arn = args.topic_arn
    kms_key_arn = args.kms_key_arn

    if args.outputs_file:
        try:
            outputs = load_outputs(args.outputs_file, args.stack)
            if not buckets:
                buckets = [outputs.get("SourceBucketName")]
            if topic_arn == FROM_OUTPUTS:
                topic_arn = outputs.get("TopicArn")
            if kms_key_arn is None and "KmsKeyArn" in outputs.values:
                kms_key_arn = outputs.get("KmsKeyArn")
                notes.append(f"using the stack's KMS key {kms_key_arn}")
            if args.consumer:
                consumer = None
                if (topic_arn is None and queue_url is None) or prefixes is None:
                    consumer = outputs.consumer(args.consumer)
                if consumer is not None:
                    if topic_arn is None and queue_url is None:
                        queue_url = consumer.queue_url
                    if prefixes is None:
                        prefixes = [consumer.prefix]
        except OutputsError as e:
            raise OnboardError(f"--outputs-file: {e}") from None
    elif args.stack:
        raise OnboardError("--stack needs --outputs-file")
    if topic_arn == FROM_OUTPUTS:
        raise OnboardError("--topic-arn without a value takes the stack's TopicArn, so it needs --outputs-file")

    if not buckets:
        raise OnboardError("no bucket: pass --bucket NAME (repeatable), or --outputs-file to use the stack's source bucket")
    for b in buckets:
        if not BUCKET_RE.match(b):
            raise OnboardError(f"--bucket {b!r} is not a valid S3 bucket name")
    buckets = list(dict.fromkeys(buckets))
    if prefixes is None and not args.revoke:
        raise OnboardError(
            "no prefix: pass --prefix (repeatable), e.g. --prefix landing/orders/; "
            "--prefix '' grants the whole bucket"
        )
    if prefixes is not None:
        for p in prefixes:
            _validate_prefix(p)
        prefixes = list(dict.fromkeys(prefixes))
        if "" in prefixes:
            notes.append("the empty prefix grants the consumer every object in the bucket")
    if not queue_url and not topic_arn:
        raise OnboardError(
            "pass --queue-url (the consumer reads the owner's queue) or --topic-arn (the consumer subscribes "
            "its own queue to the owner's topic); with --outputs-file, --consumer NAME picks the stack's queue"
        )
    if queue_url:
        _validate_queue_url(queue_url)
    if topic_arn and not TOPIC_ARN_RE.match(topic_arn):
        raise OnboardError(f"--topic-arn {topic_arn!r} is not an SNS topic ARN: arn:aws:sns:<region>:<account>:<name>")
    if kms_key_arn and not KEY_ARN_RE.match(kms_key_arn):
        raise OnboardError(
            f"--kms-key-arn {kms_key_arn!r} is not a KMS key ARN: arn:aws:kms:<region>:<account>:key/<key-id> "
            "(aliases are not accepted: the key policy belongs to the key)"
        )
    owner = (urlparse(queue_url).path.split("/")[1] if queue_url else TOPIC_ARN_RE.match(topic_arn).group(3))
    if owner == grantee.account:
        notes.append(
            f"the consumer account {grantee.account} owns the queue/topic too; same-account access "
            "does not need resource policies, but adding them is harmless"
        )
    name = args.consumer or f"account-{grantee.account}"
    if not CONSUMER_NAME_RE.match(name):
        raise OnboardError(f"--consumer {name!r} cannot name a consumer in cdk.json: use {CONSUMER_NAME_RULE}")
    if prefixes and len(prefixes) > 1:
        notes.append(
            f"cdk.json takes one prefix per consumer; its entry uses the shared prefix {common_prefix(prefixes)!r}"
        )
    return Request(
        grantee=grantee, consumer_name=name, buckets=buckets, prefixes=prefixes, queue_url=queue_url,
        topic_arn=topic_arn, kms_key_arn=kms_key_arn, region=region, endpoint_url=args.endpoint_url,
        apply=args.apply, revoke=args.revoke, notes=notes,
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


# ---------------------------------------------------------------- what the consumer needs to know

def consumer_artifacts(req: Request) -> dict:
    queue_arn = None
    if req.queue_url:
        u = urlparse(req.queue_url)
        account, name = [p for p in u.path.split("/") if p]
        queue_arn = f"arn:{req.partition}:sqs:{_queue_region(req.queue_url, req.region)}:{account}:{name}"
    prefixes = req.prefixes if req.prefixes is not None else [""]
    role_policy = pm.consumer_role_policy(
        partition=req.partition, buckets=req.buckets, prefixes=prefixes, queue_arn=queue_arn,
        topic_arn=req.topic_arn, kms_key_arn=req.kms_key_arn,
    )
    out = {"role_policy": role_policy, "cdk_context": cdk_context_entry(req.consumer_name, req.grantee, prefixes)}
    if req.topic_arn:
        out["subscriber_queue_policy"] = pm.subscriber_queue_policy(
            req.topic_arn, f"arn:{req.partition}:sqs:{req.region}:{req.grantee.account}:YOUR_QUEUE_NAME"
        )
    return out


def common_prefix(prefixes: list[str]) -> str:
    """The longest whole-directory prefix shared by all prefixes ("" if none)."""
    if len(prefixes) == 1:
        return prefixes[0]
    shared = os.path.commonprefix(prefixes)
    return shared[: shared.rfind("/") + 1]


def cdk_context_entry(name: str, grantee: pm.Grantee, prefixes: list[str]) -> dict:
    """Fragments for cdk.json's context, in the shape infra/config.py reads: append the consumer to
    `consumers` and the role to `crossAccountPrincipals`."""
    frag: dict = {"consumers": [{"name": name, "accountId": grantee.account, "prefix": common_prefix(prefixes)}]}
    if grantee.role_arn:
        frag["crossAccountPrincipals"] = [grantee.role_arn]
    return frag


def _queue_region(url: str, default: str) -> str:
    m = re.match(r"^sqs\.([a-z0-9-]+)\.amazonaws\.com", urlparse(url).hostname or "")
    return m.group(1) if m else default


# ---------------------------------------------------------------- CLI

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="onboard-account",
        description="Grant a consumer in another AWS account read access to the source data (dry run unless --apply).",
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--consumer-account", metavar="ID", help="12-digit account id of the consumer (its root principal)")
    who.add_argument("--consumer-role-arn", metavar="ARN", help="the consumer's job role, instead of the whole account")
    p.add_argument("--bucket", action="append", metavar="NAME", help="source bucket (repeatable)")
    p.add_argument("--prefix", action="append", metavar="PREFIX",
                   help="key prefix the consumer may read (repeatable; '' means the whole bucket)")
    via = p.add_mutually_exclusive_group()
    via.add_argument("--queue-url", metavar="URL", help="owner's queue the consumer reads")
    via.add_argument("--topic-arn", metavar="ARN", nargs="?", const=FROM_OUTPUTS,
                     help="owner's topic the consumer's own queue subscribes to (no value: the stack's TopicArn)")
    p.add_argument("--kms-key-arn", metavar="ARN", help="customer-managed key encrypting the data")
    p.add_argument("--outputs-file", metavar="FILE", help="`cdk deploy --outputs-file` JSON, for defaults")
    p.add_argument("--stack", metavar="NAME", help="stack in the outputs file (when it has several)")
    p.add_argument("--consumer", metavar="NAME",
                   help="consumer name: picks its queue and prefix from --outputs-file, and names the cdk.json entry")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--apply", action="store_true", help="write the policies (default: print the diff only)")
    mode.add_argument("--dry-run", action="store_true", help="print the diffs and change nothing (the default)")
    p.add_argument("--revoke", action="store_true",
                   help="remove what onboarding added for this consumer (without --prefix: every prefix)")
    p.add_argument("--endpoint-url", metavar="URL", help="AWS endpoint, e.g. a local moto server")
    p.add_argument("--region", metavar="REGION", help="AWS region (default: from the environment)")
    return p


def make_clients(req: Request) -> dict:
    import boto3
    session = boto3.session.Session(region_name=req.region)
    kw = {"endpoint_url": req.endpoint_url} if req.endpoint_url else {}
    return {svc: session.client(svc, **kw) for svc in ("s3", "sqs", "sns", "kms")}


def run(req: Request, clients: dict, out=print, err=None) -> int:
    err = err or (lambda m: print(m, file=sys.stderr))
    for note in req.notes:
        err(f"note: {note}")
    action = "revoke" if req.revoke else "grant"
    who = req.grantee.role_arn or f"account {req.grantee.account}"
    out(f"# {action} {who} ({'apply' if req.apply else 'dry run'})")
    # Every policy is read and checked before any is written, so a bad one stops the run with nothing changed.
    prepared = [prepare(t) for t in build_targets(req, clients)]
    outcomes: list[Outcome] = []
    for p in prepared:
        if req.apply:
            try:
                o = commit(p, err)
            except Exception:
                written = [x.label for x in outcomes if x.written]
                err(f"stopped at {p.label}; already written: {', '.join(written) or 'nothing'}. "
                    "Each policy is whole: re-running is safe, and --revoke removes what was added.")
                raise
        else:
            o = Outcome(p.label, p.plan.changed, False, pm.policy_diff(p.plan.before, p.plan.after, p.label))
        outcomes.append(o)
        out(o.diff.rstrip("\n") if o.changed else f"= {o.label}: unchanged")
    changed = [o for o in outcomes if o.changed]
    if not req.apply:
        if changed:
            out(f"# dry run: {len(changed)} of {len(outcomes)} policies would change; re-run with --apply to write them")
        else:
            out(f"# dry run: all {len(outcomes)} policies already as wanted; nothing to do")
    else:
        out(f"# applied: {sum(o.written for o in outcomes)} policies written, "
            f"{len(outcomes) - len(changed)} already as wanted")
    if not req.revoke:
        art = consumer_artifacts(req)
        out(f"\n# IAM policy for the consumer to attach to its job role in account {req.grantee.account}:")
        out(json.dumps(art["role_policy"], indent=2))
        if "subscriber_queue_policy" in art:
            out("\n# queue policy for the consumer's own queue, so the topic can deliver to it "
                "(replace YOUR_QUEUE_NAME), then subscribe it with RawMessageDelivery=true:")
            out(json.dumps(art["subscriber_queue_policy"], indent=2))
        out("\n# cdk.json context: add this consumer to \"consumers\" (and the role, if any, to "
            "\"crossAccountPrincipals\") so the next `cdk deploy` keeps the grant:")
        out(json.dumps(art["cdk_context"], indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        import boto3
        req = build_request(args, boto3.session.Session().region_name)
        return run(req, make_clients(req))
    except OnboardError as e:
        print(f"onboard-account: error: {e}", file=sys.stderr)
        return 1
    except pm.PolicyError as e:
        print(f"onboard-account: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("onboard-account: interrupted; each policy is either fully written or untouched", file=sys.stderr)
        return 130
    except (BotoCoreError, ClientError) as e:  # show AWS's message, not a traceback
        print(f"onboard-account: AWS error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
