"""One deploy shape as IAM sees it: every policy of the synthesized template (identity, trust, bucket, queue,
topic and key policies), resolved to the names the local stand-in gave its resources, and the principals that
act in it. `requests()` turns what a principal needs into evaluator input with the policies that decide it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from devtools.iam.actions import Need, queue_arn
from devtools.iam.evaluator import IamRequest, simulation
from infra.local_stand_in import StandIn


ANONYMOUS = "anonymous"  # an unsigned request


@dataclass(frozen=True)
class Principal:
    """Who makes calls: `arn` acts (a role session, or a service principal), under `identity` policies."""
    name: str                       # what the tests call it: "job ingest", "operator", "cleaner", ...
    arn: str                        # the request's principal: arn:aws:sts::<acct>:assumed-role/<role>/<session>
    role_arn: str | None            # aws:PrincipalArn (None for a service)
    identity: tuple = ()            # policy documents
    org_id: str | None = None       # aws:PrincipalOrgID, when its account is in an organization

    @property
    def account(self) -> str:
        return self.arn.split(":")[4]


def session(role_arn: str, session_name: str = "s3sqs") -> str:
    account, name = role_arn.split(":")[4], role_arn.rsplit("/", 1)[-1]
    return f"arn:aws:sts::{account}:assumed-role/{name}/{session_name}"


def role_principal(name: str, role_arn: str, identity, org_id: str | None = None) -> Principal:
    return Principal(name, session(role_arn), role_arn, tuple(identity), org_id)


@dataclass
class World:
    account: str
    region: str
    outputs: dict
    roles: dict = field(default_factory=dict)             # role ARN -> {"trust": doc, "identity": [docs]}
    managed: dict = field(default_factory=dict)           # logical id -> managed policy document
    resource_policies: dict = field(default_factory=dict)  # bucket/queue/topic/key ARN -> merged policy document
    bucket_keys: dict = field(default_factory=dict)       # bucket name -> key ARN
    queue_keys: dict = field(default_factory=dict)        # queue ARN -> key ARN
    topic_keys: dict = field(default_factory=dict)        # topic ARN -> key ARN
    log_group_keys: dict = field(default_factory=dict)    # log group ARN -> key ARN

    # --- the Encryption protocol of devtools.iam.actions ----------------------------------------------

    def bucket_key(self, bucket: str) -> str | None:
        return self.bucket_keys.get(bucket)

    def queue_key(self, arn: str) -> str | None:
        return self.queue_keys.get(arn)

    def topic_key(self, arn: str) -> str | None:
        return self.topic_keys.get(arn)

    def key_arn(self, key_id: str) -> str:
        if key_id.startswith("arn:"):
            return key_id
        return f"arn:aws:kms:{self.region}:{self.account}:key/{key_id}"

    # --- policies that decide a request -------------------------------------------------------------------

    def resource_policy(self, need: Need) -> dict | None:
        service = need.action.split(":", 1)[0]
        if service == "s3":
            return self.resource_policies.get("arn:aws:s3:::" + need.resource[len("arn:aws:s3:::"):].split("/", 1)[0])
        if service == "sts":
            role = self.roles.get(need.resource)
            return role["trust"] if role else None
        if service in ("sqs", "sns", "kms"):
            return self.resource_policies.get(need.resource)
        return None

    def resource_account(self, need: Need) -> str:
        parts = need.resource.split(":")
        if need.resource.startswith("arn:aws:s3:::"):
            return self.account  # bucket ARNs carry no account; every bucket here is the stack's
        return parts[4] if len(parts) > 4 and parts[4] else self.account

    def request(self, who: Principal, need: Need, why: str = "") -> tuple[IamRequest, dict]:
        context = {"aws:SecureTransport": "true", **dict(need.context)}
        if who.role_arn:
            context.update({"aws:PrincipalArn": who.role_arn, "aws:PrincipalAccount": who.account,
                            "aws:PrincipalType": "AssumedRole"})
            if need.action.startswith("kms:"):
                context["kms:CallerAccount"] = who.account
            if who.org_id:
                context["aws:PrincipalOrgID"] = who.org_id
        req = IamRequest(who.arn, need.action, need.resource, context, why)
        sim = simulation(req, list(who.identity), self.resource_policy(need), self.resource_account(need))
        if who.arn == ANONYMOUS:
            sim["request"]["principal"] = {"type": "Anonymous"}
        return req, sim

    # --- the stack's own principals -------------------------------------------------------------------

    def consumer(self, name: str) -> dict:
        return json.loads(self.outputs["Consumers"])[name]

    def job_role(self, consumer: str) -> Principal:
        arn = self.consumer(consumer)["jobRoleArn"]
        return role_principal(f"job role of {consumer}", arn, self.roles[arn]["identity"])

    def cleaner_role(self) -> Principal | None:
        if "SourceCleaning" not in self.outputs:
            return None
        arn = json.loads(self.outputs["SourceCleaning"])["roleArn"]
        return role_principal("source cleaner role", arn, self.roles[arn]["identity"])

    def managed_policy(self, prefix: str) -> dict:
        matches = [doc for lid, doc in self.managed.items() if lid.startswith(prefix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} managed policies named {prefix}*")
        return matches[0]


def _statements(doc: dict) -> list:
    s = doc.get("Statement", [])
    return [s] if isinstance(s, dict) else list(s)


def _add_policy(world: World, arn: str, doc: dict) -> None:
    """A resource's policy: statements from several policy resources (or an output) are one document."""
    current = world.resource_policies.setdefault(arn, {"Version": "2012-10-17", "Statement": []})
    current["Statement"].extend(_statements(doc))


def world_of(stand_in: StandIn, extra_bucket_policies: dict | None = None) -> World:
    """The policies of a template deployed by the stand-in; `extra_bucket_policies` (bucket name -> statements)
    are what a bucket's owner adds by hand, such as an imported source bucket's SourceBucketPolicyStatements."""
    w = World(stand_in.account_id, stand_in.region, stand_in.outputs)
    res = stand_in.resources
    for lid, r in res.items():
        t, p, phys = r["Type"], r["Properties"], r["Physical"]
        if t == "AWS::IAM::Role" and phys:
            w.roles[phys["Arn"]] = {"trust": p["AssumeRolePolicyDocument"],
                                    "identity": [x["PolicyDocument"] for x in p.get("Policies", [])]}
        elif t == "AWS::IAM::ManagedPolicy":
            w.managed[lid] = p["PolicyDocument"]
        elif t == "AWS::KMS::Key":
            _add_policy(w, phys["Arn"], p["KeyPolicy"])
        elif t == "AWS::S3::Bucket":
            for rule in p.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration", []):
                default = rule.get("ServerSideEncryptionByDefault", {})
                if default.get("SSEAlgorithm") == "aws:kms":
                    w.bucket_keys[phys["Ref"]] = w.key_arn(default["KMSMasterKeyID"])
        elif t == "AWS::SQS::Queue" and p.get("KmsMasterKeyId"):
            w.queue_keys[phys["Arn"]] = w.key_arn(p["KmsMasterKeyId"])
        elif t == "AWS::SNS::Topic" and p.get("KmsMasterKeyId"):
            w.topic_keys[phys["TopicArn"]] = w.key_arn(p["KmsMasterKeyId"])
        elif t == "AWS::Logs::LogGroup" and p.get("KmsKeyId"):
            name = p.get("LogGroupName") or phys["Ref"]
            w.log_group_keys[f"arn:aws:logs:{w.region}:{w.account}:log-group:{name}"] = w.key_arn(p["KmsKeyId"])
    for lid, r in res.items():
        t, p = r["Type"], r["Properties"]
        if t == "AWS::IAM::Policy":
            attached = set(p.get("Roles", []))  # role names; none resolve for a skipped handler's policy
            for arn, role in w.roles.items():
                if arn.rsplit("/", 1)[-1] in attached:
                    role["identity"].append(p["PolicyDocument"])
        elif t == "AWS::S3::BucketPolicy":
            _add_policy(w, f"arn:aws:s3:::{p['Bucket']}", p["PolicyDocument"])
        elif t == "AWS::SQS::QueuePolicy":
            for url in p["Queues"]:
                _add_policy(w, queue_arn(url, w.region), p["PolicyDocument"])
        elif t == "AWS::SNS::TopicPolicy":
            for arn in p["Topics"]:
                _add_policy(w, arn, p["PolicyDocument"])
    for bucket, statements in (extra_bucket_policies or {}).items():
        _add_policy(w, f"arn:aws:s3:::{bucket}", {"Statement": statements})
    return w


# --- one recording, every shape ------------------------------------------------------------------------

def _flat(outputs: dict) -> dict[str, str]:
    """The stack's outputs as path -> value, JSON outputs opened (Consumers.ingest.queueUrl)."""
    out: dict[str, str] = {}

    def walk(path: str, value) -> None:
        if isinstance(value, str) and value[:1] in "{[":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{path}.{k}", v)
        elif isinstance(value, str) and value:
            out[path] = value
    for key, value in outputs.items():
        walk(key, value)
    return out


def translation(src: World, dst: World) -> dict[str, str]:
    """Each name the code used in `src` -> the same resource's name in `dst`, as both stacks publish them
    (outputs: buckets, queue URLs and ARNs, roles, the application, the key): the tools and the job take
    every name from the outputs, so a call recorded in one shape is the same call in another."""
    a, b = _flat(src.outputs), _flat(dst.outputs)
    pairs = {a[k]: b[k] for k in a.keys() & b.keys() if a[k] != b[k] and k.endswith(_NAMES)}
    if "KmsKeyArn" in a and "KmsKeyArn" in b:  # calls name the key by id too
        pairs[a["KmsKeyArn"].rsplit("/", 1)[-1]] = b["KmsKeyArn"].rsplit("/", 1)[-1]
    return pairs


# The outputs that name resources (not settings such as cleanSource, whose words could appear in a key).
_NAMES = ("Arn", "Url", "Uri", "BucketName", "ApplicationId", "GroupName")


def translate(value, pairs: dict[str, str]):
    """`value` (a call's parameters) with every recorded name replaced, longest names first."""
    if isinstance(value, dict):
        return {k: translate(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [translate(v, pairs) for v in value]
    if isinstance(value, str):
        for old in sorted(pairs, key=len, reverse=True):
            if old in value:
                value = value.replace(old, pairs[old])
        return value
    return value


def names_of(world: World) -> set[str]:
    """Every resource name the stack publishes: what a call translated into `world` may name."""
    names = {v for k, v in _flat(world.outputs).items() if k.endswith(_NAMES)}
    # A consumer's prefixes (checkpoints/<name>/ ...) name it in object keys and listings too.
    return names | {v.split("/", 3)[3] for v in names if v.startswith("s3://") and v.count("/") >= 3
                    and v.split("/", 3)[3]}
