"""What onboard-account was asked to do, validated, and what the consumer must be told. No I/O.

Every flag is checked here, before any AWS call; an error names the flag and says what is allowed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

from infra.config import ConfigError, parse_config
from infra.contract import ACCOUNT_ID_RE, CONSUMER_NAME_RE, CONSUMER_NAME_RULE, key_prefix_problem
from ops.onboarding import OnboardError
from ops.onboarding import policy as pm
from ops.stack_outputs import OutputsError, StackOutputs

BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
TOPIC_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):sns:([a-z0-9-]+):([0-9]{12}):([A-Za-z0-9_.-]{1,256})\Z")
KEY_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):kms:([a-z0-9-]+):([0-9]{12}):key/([A-Za-z0-9-]+)\Z")
QUEUE_ARN_RE = re.compile(r"^arn:(aws[a-z-]*):sqs:([a-z0-9-]+):([0-9]{12}):([A-Za-z0-9_-]{1,80})\Z")
# What a bare --topic-arn stands for: the stack's TopicArn output.
FROM_OUTPUTS = "<from-outputs>"


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
    subscriber_queue_arn: str | None = None  # topic mode: the consumer's own queue, which the owner subscribes
    force: bool = False  # write even where onboarding would refuse (policy.refusals)
    # cdk.json's context when it was found: the printed entry is made to fit it and checked against it.
    cdk_context: dict | None = None
    # Consumer names the stack already has (from its outputs) when there is no cdk.json to read.
    stack_consumers: tuple[str, ...] = ()
    # Queue mode: grant the queue even when another account already consumes it.
    share_queue: bool = False
    # Queue mode: accounts cdk.json (or the stack's outputs) says read this queue -> how we know.
    declared_queue_readers: dict[str, str] = field(default_factory=dict)

    @property
    def partition(self) -> str:
        return self.grantee.partition

    @property
    def queue_arn(self) -> str | None:
        """The owner's queue (queue mode), from its URL."""
        if not self.queue_url:
            return None
        account, name = [p for p in urlparse(self.queue_url).path.split("/") if p]
        return f"arn:{self.partition}:sqs:{_queue_region(self.queue_url, self.region)}:{account}:{name}"


def _validate_queue_url(url: str) -> None:
    u = urlparse(url)
    parts = [p for p in u.path.split("/") if p]
    if u.scheme not in ("http", "https") or len(parts) != 2 or not pm.ACCOUNT_ID_RE.match(parts[0]):
        raise OnboardError(
            f"--queue-url {url!r} is not an SQS queue URL: expected https://sqs.<region>.amazonaws.com/<account>/<name>"
        )


def _validate_prefix(prefix: str, *, revoke: bool, source: str = "--prefix") -> None:
    if "*" in prefix or "?" in prefix:
        raise OnboardError(f"{source} {prefix!r} contains a wildcard; give a literal key prefix such as "
                           "'landing/orders/'")
    if len(prefix) > 1024:
        raise OnboardError(f"{source} is longer than an S3 key can be")
    # The rule cdk.json's consumer prefixes follow too. Not for a revoke: it only removes, and must still find
    # what earlier versions granted for a prefix without its '/' (each statement's Sid hashes the prefix as given).
    problem = None if revoke else key_prefix_problem(prefix)
    if problem:
        raise OnboardError(f"{source} {problem}")


def needs_outputs(args: argparse.Namespace) -> str | None:
    """What must come from the stack outputs (the bucket, a bare --topic-arn's topic, --consumer's queue or
    prefix), or None: then the outputs file is read only when --outputs-file is given."""
    if not args.bucket:
        return "without --bucket, the source bucket"
    if args.topic_arn == FROM_OUTPUTS:
        return "for a bare --topic-arn, the topic"
    if args.consumer and (args.prefix is None or not (args.queue_url or args.topic_arn)):
        return f"--consumer {args.consumer}'s queue and prefix"
    return None


@dataclass
class _Named:
    """What the flags name, filled in from the stack outputs where they leave something out."""

    buckets: list[str]
    prefixes: list[str] | None
    queue_url: str | None
    topic_arn: str | None
    kms_key_arn: str | None
    prefix_source: str = "--prefix"
    queue_consumer: str | None = None  # the stack's consumer whose queue queue_url is, when known

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "_Named":
        return cls(list(args.bucket or []), list(args.prefix) if args.prefix is not None else None,
                   args.queue_url, args.topic_arn, args.kms_key_arn)

    def fill_from(self, outputs: StackOutputs, consumer: str | None, notes: list[str]) -> None:
        """The source bucket, a bare --topic-arn's topic, the stack's key, and --consumer's queue and prefix."""
        try:
            if not self.buckets:
                self.buckets = [outputs.get("SourceBucketName")]
            if self.topic_arn == FROM_OUTPUTS:
                self.topic_arn = outputs.get("TopicArn")
            if self.kms_key_arn is None and "KmsKeyArn" in outputs.values:
                self.kms_key_arn = outputs.get("KmsKeyArn")
                notes.append(f"using the stack's KMS key {self.kms_key_arn}")
            needs_queue = self.topic_arn is None and self.queue_url is None
            if consumer and (needs_queue or self.prefixes is None):
                published = outputs.consumer(consumer)
                if needs_queue:
                    self.queue_url, self.queue_consumer = published.queue_url, consumer
                if self.prefixes is None:
                    self.prefixes = [published.prefix]
                    self.prefix_source = f"--consumer {consumer}'s prefix (from the stack outputs; or pass --prefix)"
        except OutputsError as e:
            raise OnboardError(f"--outputs-file: {e}") from None


def build_request(args: argparse.Namespace, default_region: str | None,
                  outputs: StackOutputs | None = None, cdk_context: dict | None = None) -> Request:
    """The validated request; `outputs` (the stack's, read from --outputs-file) fills in what the flags leave out;
    `cdk_context` (cdk.json's) is what the printed consumer entry must fit."""
    notes: list[str] = []
    region = args.region or default_region
    grantee = _grantee(args, pm.partition_for_region(region or ""))
    if not region:
        raise OnboardError("no AWS region: pass --region or set AWS_REGION")
    named = _Named.from_args(args)
    if outputs is not None:
        named.fill_from(outputs, args.consumer, notes)
    if named.topic_arn == FROM_OUTPUTS:
        raise OnboardError("--topic-arn without a value takes the stack's TopicArn, so it needs --outputs-file")
    buckets = _checked_buckets(named.buckets)
    prefixes = _checked_prefixes(named.prefixes, args.revoke, named.prefix_source, notes)
    _check_targets(named, args, grantee)
    if args.revoke and not named.kms_key_arn:
        notes.append(
            "warning: no --kms-key-arn, so no key policy is read: a grant made earlier with a key keeps its "
            "kms:Decrypt statements. Pass --kms-key-arn ARN (or --outputs-file of a stack with a key) to remove them"
        )
    queue_url, topic_arn = named.queue_url, named.topic_arn
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
        topic_arn=topic_arn, kms_key_arn=named.kms_key_arn, region=region, endpoint_url=args.endpoint_url,
        apply=args.apply, revoke=args.revoke, notes=notes, subscriber_queue_arn=args.subscriber_queue_arn,
        force=args.force, cdk_context=cdk_context,
        stack_consumers=tuple(outputs.consumer_names()) if outputs is not None and "Consumers" in outputs.values
        else (),
        share_queue=args.share_queue,
        declared_queue_readers=declared_queue_readers(queue_url, named.queue_consumer, outputs, cdk_context)
        if queue_url else {},
    )


def _grantee(args: argparse.Namespace, partition: str) -> pm.Grantee:
    """One role (--consumer-role-arn), or an account narrowed by conditions on the caller."""
    if args.consumer_role_arn:
        if args.principal_arn_like or args.principal_org_id:
            raise OnboardError("--principal-arn-like and --principal-org-id narrow --consumer-account; "
                               "a --consumer-role-arn grant is already one role")
        return pm.Grantee.for_role(args.consumer_role_arn)
    # A revoke finds statements by Sid, whatever conditions they were granted with.
    return pm.Grantee.for_account(args.consumer_account, partition, args.principal_arn_like or (),
                                  args.principal_org_id, require_conditions=not args.revoke)


def _checked_buckets(buckets: list[str]) -> list[str]:
    if not buckets:
        raise OnboardError("no bucket: pass --bucket NAME (repeatable), or --outputs-file to use the stack's source bucket")
    for b in buckets:
        if not BUCKET_RE.match(b):
            raise OnboardError(f"--bucket {b!r} is not a valid S3 bucket name")
    return list(dict.fromkeys(buckets))


def _checked_prefixes(prefixes: list[str] | None, revoke: bool, source: str, notes: list[str]) -> list[str] | None:
    """The prefixes, each once; None only for a revoke of every prefix."""
    if prefixes is None:
        if not revoke:
            raise OnboardError(
                "no prefix: pass --prefix (repeatable), e.g. --prefix landing/orders/; "
                "--prefix '' grants the whole bucket"
            )
        return None
    for p in prefixes:
        _validate_prefix(p, revoke=revoke, source=source)
    if "" in prefixes:
        notes.append("the empty prefix grants the consumer every object in the bucket")
    return list(dict.fromkeys(prefixes))


def _check_targets(named: _Named, args: argparse.Namespace, grantee: pm.Grantee) -> None:
    """The queue (queue mode) or the topic and the consumer's own queue (topic mode), and the key."""
    queue_url, topic_arn, kms_key_arn = named.queue_url, named.topic_arn, named.kms_key_arn
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
    if args.share_queue and not queue_url:
        raise OnboardError("--share-queue is for queue mode (--queue-url, or --consumer's queue): in topic mode the "
                           "consumer reads its own queue")
    _check_subscriber(args.subscriber_queue_arn, topic_arn, grantee)


def _check_subscriber(subscriber: str | None, topic_arn: str | None, grantee: pm.Grantee) -> None:
    """Topic mode's own queue of the consumer: required there, in the consumer's account, and only there."""
    if subscriber and not topic_arn:
        raise OnboardError("--subscriber-queue-arn is for topic mode: pass it with --topic-arn")
    if topic_arn and not subscriber:
        raise OnboardError(
            "--topic-arn needs --subscriber-queue-arn ARN: the consumer's own queue, which the owner subscribes "
            "with a filter on the consumer's prefixes (the consumer gets no sns:Subscribe, which would let it "
            "receive every event of the bucket)"
        )
    if subscriber:
        m = QUEUE_ARN_RE.match(subscriber)
        if not m:
            raise OnboardError(f"--subscriber-queue-arn {subscriber!r} is not an SQS queue ARN: "
                               "arn:aws:sqs:<region>:<account>:<name>")
        if m.group(3) != grantee.account:
            raise OnboardError(f"--subscriber-queue-arn {subscriber!r} is in account {m.group(3)}, not the "
                               f"consumer's account {grantee.account}")


def _queue_key(url: str) -> list[str]:
    """A queue URL's account and name: the host differs between endpoints (legacy, VPC, local) for one queue."""
    return [p for p in urlparse(url).path.split("/") if p]


def _outputs_consumers(outputs: StackOutputs | None) -> dict:
    """The stack outputs' Consumers object, or {} when there is none that parses (other checks report that)."""
    if outputs is None or "Consumers" not in outputs.values:
        return {}
    raw = outputs.values["Consumers"]
    try:
        consumers = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return {k: v for k, v in consumers.items() if isinstance(v, dict)} if isinstance(consumers, dict) else {}


def declared_queue_readers(queue_url: str, consumer: str | None, outputs: StackOutputs | None,
                           cdk_context: dict | None) -> dict[str, str]:
    """Who the stack says reads this queue, account -> how we know: the queue is a stack consumer's (`consumer`,
    when it came from the outputs, or the one whose queueUrl it is), and that consumer's accountId in cdk.json
    (or in the outputs, should they carry it). A consumer without accountId is the deploying account's: its job
    role there, in the queue's account, reads the queue."""
    published = _outputs_consumers(outputs)
    if consumer is None:
        consumer = next((n for n, c in published.items()
                         if isinstance(c.get("queueUrl"), str) and _queue_key(c["queueUrl"]) == _queue_key(queue_url)),
                        None)
    if consumer is None:
        return {}
    out: dict[str, str] = {}
    account = published.get(consumer, {}).get("accountId")
    if isinstance(account, str) and ACCOUNT_ID_RE.match(account):
        out[account] = f"the stack outputs' consumer {consumer!r}"
    if cdk_context is not None:
        try:
            configured = {c.name: c for c in parse_config(cdk_context).consumers}
        except ConfigError:
            configured = {}  # cdk_context_entry says that cdk.json does not parse
        if consumer in configured:
            account = configured[consumer].account_id
            if account is None:
                out[_queue_key(queue_url)[0]] = (f"cdk.json's consumer {consumer!r}, which has no accountId: the "
                                                 "stack's job role in the queue's account reads it")
            else:
                out[account] = f"{out[account]}; cdk.json's consumer {consumer!r}" if account in out \
                    else f"cdk.json's consumer {consumer!r}"
    return out


# ---------------------------------------------------------------- what the consumer needs to know

def consumer_artifacts(req: Request) -> dict:
    """The consumer's side of the grant: its role policy, its cdk.json entry and, in topic mode, its queue policy."""
    prefixes = req.prefixes if req.prefixes is not None else [""]
    role_policy = pm.consumer_role_policy(
        partition=req.partition, buckets=req.buckets, prefixes=prefixes, queue_arn=req.queue_arn,
        kms_key_arn=req.kms_key_arn,
    )
    entry, notes = cdk_context_entry(req.consumer_name, req.grantee, prefixes, req.cdk_context, req.stack_consumers)
    out = {"role_policy": role_policy, "cdk_context": entry, "cdk_notes": notes}
    if req.topic_arn and req.subscriber_queue_arn:
        out["subscriber_queue_policy"] = pm.subscriber_queue_policy(req.topic_arn, req.subscriber_queue_arn)
    return out


def common_prefix(prefixes: list[str]) -> str:
    """The longest whole-directory prefix shared by all prefixes ("" if none)."""
    if len(prefixes) == 1:
        return prefixes[0]
    shared = os.path.commonprefix(prefixes)
    return shared[: shared.rfind("/") + 1]


def cdk_context_entry(name: str, grantee: pm.Grantee, prefixes: list[str], cdk_context: dict | None = None,
                      stack_consumers: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    """Fragments for cdk.json's context, in the shape infra/config.py reads: a consumer to append to
    `consumers` and the role to `crossAccountPrincipals`; plus notes on how the entry fits cdk.json.

    A name cdk.json (or, without it, the stack) already has for another account is not reused, since synth
    rejects a duplicate: the entry names a new consumer `<name>-<account>` instead. For the same account no
    consumer is added, only the role. With cdk.json at hand the result is checked as `cdk synth` checks it.
    """
    notes: list[str] = []
    known: dict[str, str | None] = {n: None for n in stack_consumers}
    principals: tuple[str, ...] = ()
    if cdk_context is not None:
        try:
            config = parse_config(cdk_context)
            known = {c.name: c.account_id for c in config.consumers}
            principals = config.cross_account_principals
        except ConfigError as e:
            notes.append(f"cdk.json does not parse ({e}); the entry below is not checked against it")
            cdk_context = None
    frag: dict = {}
    access = _account_access(grantee)
    if name in known and known[name] == grantee.account:
        notes.append(f"consumer {name!r} is already in cdk.json for account {grantee.account}"
                     + ("" if grantee.role_arn else f"; give it \"accountAccess\": {json.dumps(access)} so the next "
                                                    "deploy keeps this grant"))
    else:
        if name in known:
            owner = f" for account {known[name]}" if known[name] else ""
            taken = name
            name = _free_name(name, grantee.account, known)
            notes.append(f"{taken!r} already names a consumer{owner}, so the entry is a new consumer {name!r}: the "
                         f"next deploy gives it its own queue; then onboard it onto that one with --consumer {name}")
        consumer: dict = {"name": name, "accountId": grantee.account, "prefix": common_prefix(prefixes)}
        if not grantee.role_arn:
            consumer["accountAccess"] = access  # the account grant with the same conditions, in cdk.json's words
        frag["consumers"] = [consumer]
    if grantee.role_arn and grantee.role_arn not in principals:
        frag["crossAccountPrincipals"] = [grantee.role_arn]
    if cdk_context is not None and frag:
        merged = {**cdk_context,
                  "consumers": list(cdk_context.get("consumers") or []) + frag.get("consumers", []),
                  "crossAccountPrincipals": list(cdk_context.get("crossAccountPrincipals") or [])
                  + frag.get("crossAccountPrincipals", [])}
        try:
            parse_config(merged)
        except ConfigError as e:
            notes.append(f"with this entry, cdk synth would fail: {e}")
    return frag, notes


def _account_access(grantee: pm.Grantee) -> dict:
    """cdk.json's `accountAccess` for an account grant: the conditions onboarding put on it."""
    access: dict = {}
    if grantee.principal_arn_like:
        access["principalArnLike"] = list(grantee.principal_arn_like)
    if grantee.principal_org_id:
        access["principalOrgId"] = grantee.principal_org_id
    return access


def _free_name(name: str, account: str, known) -> str:
    """`<name>-<account>`, shortened to the consumer-name limit and made unique among `known`."""
    for n in range(1, 100):
        suffix = f"-{account}" + (f"-{n}" if n > 1 else "")
        candidate = name[: 32 - len(suffix)].rstrip("-") + suffix
        if candidate not in known:
            return candidate
    raise OnboardError(f"cannot find a free consumer name like {name}-{account}: pass --consumer with another name")


def _queue_region(url: str, default: str) -> str:
    m = re.match(r"^sqs\.([a-z0-9-]+)\.amazonaws\.com", urlparse(url).hostname or "")
    return m.group(1) if m else default
