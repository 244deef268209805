"""Local stand-in: the stack's own wiring, created on a moto server from the synthesized template.

moto's CloudFormation cannot deploy this template (it skips notifications, subscriptions, policies and
EMR Serverless, and hangs on Lambda-backed custom resources), so this module reads the resources of the
template that `cdk deploy` would ship and makes the matching API calls itself. There is one definition
of the wiring, the CDK app; the demo and the integration tests exercise what deploys.

How each resource type in the template is handled:

- AWS::S3::Bucket: created, named after its logical id in lower case (a real deploy generates a name).
  Encryption, versioning, public access block and lifecycle rules are applied. Server access logging
  is not: moto does not deliver access logs.
- Custom::S3BucketNotifications (CDK's Lambda-backed resource): its NotificationConfiguration is
  written with PutBucketNotificationConfiguration, merged with what the bucket already has when the
  resource is not `Managed` (an imported bucket), exactly as CDK's handler does. An imported bucket
  does not exist on a fresh server, so it is created first. The handler's Lambda function and the IAM
  role and policy that only serve it are skipped: without Docker moto cannot run the function.
- AWS::S3::BucketPolicy: stored, less its conditional Deny statements (SSL-only): moto's S3 applies a
  Deny without evaluating its Condition, so that statement would refuse every plain-HTTP local request.
  Other bucket policy statements are stored and, like all resource policies on moto, not enforced.
- AWS::SNS::Topic, AWS::SNS::TopicPolicy, AWS::SQS::Queue (all attributes, RedrivePolicy included;
  moto accepts RedriveAllowPolicy but does not keep it), AWS::SQS::QueuePolicy, AWS::KMS::Key, AWS::IAM::Role, AWS::IAM::Policy,
  AWS::Logs::LogGroup, AWS::CloudWatch::Alarm (metric math and Metrics Insights alarms too) and
  AWS::CloudWatch::Dashboard: created with their template properties, tags included on buckets, topics,
  queues and keys. moto stores these resource policies but does not enforce them, and alarms never fire.
- AWS::SNS::Subscription: created with RawMessageDelivery, FilterPolicy and FilterPolicyScope (the alarm
  topic's e-mail subscriptions too: moto sends no mail). One
  deliberate translation: moto URL-encodes "/" in event keys ("a/b" arrives as "a%2Fb"), real S3 does
  not, so key-prefix filter values are encoded the same way here to keep the template's routing.
- AWS::Events::Rule (the source cleaner's schedule): created with its schedule and targets; nothing runs.
  The scheduled cleaner's Lambda function is skipped like CDK's handler (its name and ARN resolve, for its
  alarm and its rule; its invoke permission is skipped with it), and its role, SourceCleanerRole, is
  created: source-state clean uses it too.
- AWS::EMRServerless::Application: created with its properties. moto 5.2.5 rejects release labels not
  shaped like "emr-7.1.0", so when it refuses the template's label (emr-spark-8.0.0) the application is
  created with MOTO_RELEASE_LABEL and tagged `releaseLabel=<the template's label>`. Job runs succeed at
  once on moto; nothing executes.
- Any other resource type fails loudly, so a new resource cannot silently go missing locally.

Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split are resolved, with the pseudo parameters
of the moto account. The returned dict has the same keys as the stack's outputs.
"""
from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote_plus

from infra import STACK_NAME

MOTO_RELEASE_LABEL = "emr-7.1.0"

_SYNTH_CACHE: dict[str, dict] = {}


def synth_template(context_overrides: dict | None = None) -> dict:
    """Synthesize the stack in-process with cdk.json's context (plus overrides); return its template.

    Overrides replace whole top-level context keys (pass the full `consumers` list, for example).
    Builtin CloudFormation validation and cdk-nag are off here (the tests run both). Results are cached
    per overrides for the life of the process; callers get their own copy.
    """
    cache_key = json.dumps(context_overrides or {}, sort_keys=True)
    if cache_key not in _SYNTH_CACHE:
        from infra.app import build_app, cdk_json_context  # starts jsii: only when needed

        context = {**cdk_json_context(), **(context_overrides or {})}
        with tempfile.TemporaryDirectory(prefix="cdk-synth-") as outdir:
            app, _ = build_app(context, nag=False, builtin_validation=False, outdir=outdir)
            assembly = app.synth()
            template = json.loads(Path(outdir, assembly.get_stack_by_name(STACK_NAME).template_file).read_text())
        _SYNTH_CACHE[cache_key] = template
    return copy.deepcopy(_SYNTH_CACHE[cache_key])


def write_outputs_file(outputs: dict, path: str | os.PathLike, stack_name: str = STACK_NAME) -> Path:
    """Write outputs in the shape of `cdk deploy --outputs-file`: {stack_name: {key: value}}."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({stack_name: outputs}, indent=2, sort_keys=True) + "\n")
    return p


def deploy_to_moto(template: dict, endpoint_url: str, region: str = "us-east-1") -> dict[str, str]:
    """Create the template's resources on a moto server; return the values its Outputs would have."""
    return deploy_stand_in(template, endpoint_url, region).outputs


@dataclass(frozen=True)
class StandIn:
    """A template deployed on moto: its outputs, and each resource's properties resolved to the local names (what
    a policy evaluator reads: the same ARNs the code calls). A resource the stand-in skips (a Lambda function) is
    listed with what of it resolves (its role), or without properties."""
    outputs: dict[str, str]
    resources: dict[str, dict]  # logical id -> {"Type", "Properties", "Physical"}
    account_id: str
    region: str


def deploy_stand_in(template: dict, endpoint_url: str, region: str = "us-east-1") -> StandIn:
    deployer = _Deployer(template, endpoint_url, region)
    outputs = deployer.deploy()
    resolved = {}
    for lid, r in deployer.resources.items():
        props: dict = {}
        try:
            props = deployer.resolve(r.get("Properties", {}))
        except StandInError:
            if lid not in deployer.skipped:
                raise
            for k, v in r.get("Properties", {}).items():  # a skipped function: what of it is known here
                try:
                    props[k] = deployer.resolve(v)
                except StandInError:
                    pass
        resolved[lid] = {"Type": r["Type"], "Properties": props, "Physical": deployer.physical.get(lid, {})}
    return StandIn(outputs, resolved, deployer.account_id, region)


@dataclass(frozen=True)
class ConsumerPath:
    bucket: str
    queue_url: str
    dlq_url: str


# What an S3 event travels through on its way to a consumer's queue.
_PATH_TYPES = {"AWS::S3::Bucket", "AWS::S3::BucketPolicy", "Custom::S3BucketNotifications", "AWS::KMS::Key",
               "AWS::SNS::Topic", "AWS::SNS::TopicPolicy", "AWS::SNS::Subscription", "AWS::SQS::Queue",
               "AWS::SQS::QueuePolicy"}


def consumer_path(template: dict, consumer: str) -> set[str]:
    """The logical ids of the resources between the source bucket and one consumer's queue: the bucket and its
    notifications, the fan-out topic, the consumer's subscription, queue and dead-letter queue, their policies
    and keys, and what those need (the access-log bucket)."""
    from infra.contract import queue_name

    resources = template["Resources"]
    wanted = queue_name(STACK_NAME, consumer)
    queues = [lid for lid, r in resources.items()
              if r["Type"] == "AWS::SQS::Queue" and r.get("Properties", {}).get("QueueName") == wanted]
    if not queues:
        raise StandInError(f"the template has no queue {wanted!r}: is {consumer!r} a consumer in cdk.json?")
    chosen = {queues[0]} | {lid for lid, r in resources.items() if r["Type"] == "Custom::S3BucketNotifications"}
    chosen |= {lid for lid, r in resources.items() if r["Type"] == "AWS::SNS::Subscription"
               and queues[0] in _references(r.get("Properties", {}))}
    while True:  # what the chosen ones reference, and the policies of what is chosen
        refs = set().union(*(_references({k: v for k, v in resources[lid].get("Properties", {}).items()
                                          if k != "ServiceToken"}) for lid in chosen))
        grown = chosen | {lid for lid in refs if resources.get(lid, {}).get("Type") in _PATH_TYPES}
        grown |= {lid for lid, r in resources.items() if r["Type"].endswith("Policy") and r["Type"] in _PATH_TYPES
                  and _references(r.get("Properties", {})) & grown
                  and _references(r.get("Properties", {})) <= grown | set(_PSEUDO)}
        if grown == chosen:
            return chosen
        chosen = grown


def source_bucket_name(template: dict, name_prefix: str) -> str:
    """The name deploy_consumer_path gives the source bucket; an existing bucket of that name is kept, with its
    objects (as `cdk deploy` keeps an imported bucket's)."""
    lid = next(lid for lid, r in template["Resources"].items() if r["Type"] == "Custom::S3BucketNotifications")
    bucket = template["Resources"][lid]["Properties"]["BucketName"]["Ref"]
    return _short(name_prefix + (template["Resources"][bucket].get("Properties", {}).get("BucketName")
                                 or bucket.lower()), 63)


def deploy_consumer_path(template: dict, endpoint_url: str, consumer: str, name_prefix: str,
                         region: str = "us-east-1") -> ConsumerPath:
    """Create one consumer's path (consumer_path) on a moto server, every bucket, topic and queue named with
    `name_prefix`, so each caller (a test, a benchmark run) gets its own copy of the production wiring."""
    d = _Deployer(template, endpoint_url, region, name_prefix=name_prefix, only=consumer_path(template, consumer))
    d.deploy(outputs=False)
    resources = template["Resources"]
    notifications = next(lid for lid in d.physical if resources[lid]["Type"] == "Custom::S3BucketNotifications")
    bucket = d.resolve(resources[notifications]["Properties"]["BucketName"])
    queues = [lid for lid in d.physical if resources[lid]["Type"] == "AWS::SQS::Queue"]
    main = next(lid for lid in queues if "RedrivePolicy" in resources[lid].get("Properties", {}))
    dlq = next(lid for lid in queues if lid != main)
    return ConsumerPath(bucket, d.physical[main]["QueueUrl"], d.physical[dlq]["QueueUrl"])


class StandInError(RuntimeError):
    """The template holds something the stand-in cannot reproduce on moto."""


_NO_VALUE = object()
_PSEUDO = ("AWS::AccountId", "AWS::Region", "AWS::Partition", "AWS::URLSuffix", "AWS::StackName", "AWS::StackId",
           "AWS::NoValue")
_SKIPPED_TYPES = {"AWS::Lambda::Function", "AWS::Lambda::Permission", "AWS::CDK::Metadata"}


def _short(name: str, limit: int) -> str:
    """Deterministic name within a service's length limit; keeps the logical id's hash suffix."""
    return name if len(name) <= limit else name[: limit - 9] + name[-9:]


class _Deployer:
    def __init__(self, template: dict, endpoint_url: str, region: str, name_prefix: str = "",
                 only: set[str] | None = None) -> None:
        import boto3

        self.template = template
        self.resources: dict[str, dict] = template.get("Resources", {})
        self.region = region
        self.prefix = name_prefix
        session = boto3.session.Session(
            aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
            region_name=region,
        )
        self._client: Callable[[str], Any] = lambda service: session.client(service, endpoint_url=endpoint_url)
        self.clients: dict[str, Any] = {}
        self.account_id = self.client("sts").get_caller_identity()["Account"]
        self.physical: dict[str, dict[str, str]] = {}
        self.skipped = self._skipped() | (set() if only is None else set(self.resources) - only)

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self._client(service)
        return self.clients[service]

    # --- orchestration ---------------------------------------------------------------------------

    def deploy(self, outputs: bool = True) -> dict[str, str]:
        handlers = {
            "AWS::S3::Bucket": self._bucket,
            "AWS::S3::BucketPolicy": self._bucket_policy,
            "AWS::KMS::Key": self._kms_key,
            "AWS::SNS::Topic": self._topic,
            "AWS::SNS::TopicPolicy": self._topic_policy,
            "AWS::SQS::Queue": self._queue,
            "AWS::SQS::QueuePolicy": self._queue_policy,
            "AWS::SNS::Subscription": self._subscription,
            "Custom::S3BucketNotifications": self._bucket_notifications,
            "AWS::IAM::Role": self._role,
            "AWS::IAM::Policy": self._policy,
            "AWS::IAM::ManagedPolicy": self._managed_policy,
            "AWS::Logs::LogGroup": self._log_group,
            "AWS::CloudWatch::Alarm": self._alarm,
            "AWS::CloudWatch::Dashboard": self._dashboard,
            "AWS::EMRServerless::Application": self._emr_application,
            "AWS::Events::Rule": self._events_rule,
        }
        for lid in self._creation_order():
            rtype = self.resources[lid]["Type"]
            if rtype not in handlers:
                raise StandInError(f"resource {lid} has type {rtype}, which the local stand-in does not handle")
            self.physical[lid] = handlers[rtype](lid, self.resources[lid].get("Properties", {})) or {}
        if not outputs:
            return {}
        return {
            key: str(self.resolve(out["Value"]))
            for key, out in self.template.get("Outputs", {}).items()
            if "Condition" not in out
        }

    def _skipped(self) -> set[str]:
        """The Lambda functions, and the IAM role and policies that exist only to serve them (a role that
        something else uses too, such as the source cleaner's, is created)."""
        skipped = {lid for lid, r in self.resources.items() if r["Type"] in _SKIPPED_TYPES}
        for lid in list(skipped):
            role = self.resources[lid].get("Properties", {}).get("Role")
            if isinstance(role, dict) and "Fn::GetAtt" in role and not self._used_elsewhere(role["Fn::GetAtt"][0]):
                skipped.add(role["Fn::GetAtt"][0])
        for lid, r in self.resources.items():
            if r["Type"] == "AWS::IAM::Policy":
                roles = r.get("Properties", {}).get("Roles", [])
                if roles and all(isinstance(x, dict) and x.get("Ref") in skipped for x in roles):
                    skipped.add(lid)
        return skipped

    def _used_elsewhere(self, role: str) -> bool:
        """Whether anything but Lambda functions and the policies attached to `role` refers to it."""
        users = [r.get("Properties", {}) for r in self.resources.values() if r["Type"] not in _SKIPPED_TYPES
                 and not (r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r.get("Properties", {}).get("Roles", []))]
        return any(role in _references(p) for p in users + [self.template.get("Outputs", {})])

    def _creation_order(self) -> list[str]:
        deps: dict[str, set[str]] = {}
        for lid, r in self.resources.items():
            if lid in self.skipped:
                continue
            props = r.get("Properties", {})
            if r["Type"].startswith("Custom::"):
                props = {k: v for k, v in props.items() if k != "ServiceToken"}
            found = _references(props)
            depends = r.get("DependsOn", [])
            found |= set([depends] if isinstance(depends, str) else depends)
            deps[lid] = {d for d in found if d in self.resources and d not in self.skipped}
        order: list[str] = []
        done: set[str] = set()

        def visit(lid: str, path: tuple[str, ...]) -> None:
            if lid in done:
                return
            if lid in path:
                raise StandInError(f"dependency cycle: {' -> '.join(path + (lid,))}")
            for dep in sorted(deps[lid]):
                visit(dep, path + (lid,))
            done.add(lid)
            order.append(lid)

        for lid in self.resources:  # template order keeps the result deterministic
            if lid not in self.skipped:
                visit(lid, ())
        return order

    # --- intrinsic functions ---------------------------------------------------------------------

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.resolve(x) for x in node) if v is not _NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self._ref(arg)
            if fn == "Fn::GetAtt":
                lid, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self._attr(lid, attr)
            if fn == "Fn::Join":
                return arg[0].join(str(x) for x in self.resolve(arg[1]))
            if fn == "Fn::Sub":
                return self._sub(arg)
            if fn == "Fn::Select":
                return self.resolve(arg[1])[int(self.resolve(arg[0]))]
            if fn == "Fn::Split":
                return self.resolve(arg[1]).split(arg[0])
            if fn.startswith("Fn::"):
                raise StandInError(f"intrinsic {fn} is not supported by the local stand-in")
        return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not _NO_VALUE}

    def _ref(self, name: str) -> Any:
        pseudo = {
            "AWS::AccountId": self.account_id,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": STACK_NAME,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account_id}:stack/{STACK_NAME}/local",
            "AWS::NoValue": _NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        return self._attr(name, "Ref")

    def _attr(self, lid: str, attr: str) -> str:
        if lid in self.skipped and self.resources[lid]["Type"] == "AWS::Lambda::Function":
            # Named as a deploy would, for what points at it (an alarm's dimension, a schedule's target).
            name = _short(f"{self.prefix}{lid}", 64)
            return name if attr == "Ref" else f"arn:aws:lambda:{self.region}:{self.account_id}:function:{name}"
        if lid in self.skipped:
            raise StandInError(f"{lid} is not created locally, so its {attr} cannot be resolved")
        try:
            return self.physical[lid][attr]
        except KeyError:
            raise StandInError(f"{lid}.{attr} is not known (is {lid} created before its users?)") from None

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def replace(m: re.Match) -> str:
            name = m.group(1)
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                lid, attr = name.split(".", 1)
                return str(self._attr(lid, attr))
            return str(self._ref(name))

        return re.sub(r"\$\{([^!}][^}]*)\}", replace, text)

    # --- S3 ----------------------------------------------------------------------------------------

    def _bucket(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = _short(self.prefix + (p.get("BucketName") or lid.lower()), 63)
        self._ensure_bucket(name)
        s3 = self.client("s3")
        enc = p.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration")
        if enc:
            s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": [
                {"ApplyServerSideEncryptionByDefault": {
                    k: v for k, v in r["ServerSideEncryptionByDefault"].items()
                    if k in ("SSEAlgorithm", "KMSMasterKeyID")
                }, **({"BucketKeyEnabled": r["BucketKeyEnabled"]} if "BucketKeyEnabled" in r else {})}
                for r in enc
            ]})
        if "VersioningConfiguration" in p:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": p["VersioningConfiguration"]["Status"]})
        if "PublicAccessBlockConfiguration" in p:
            s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=p["PublicAccessBlockConfiguration"])
        if p.get("Tags"):
            s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": t["Key"], "Value": t["Value"]}
                                                                   for t in p["Tags"]]})
        rules = p.get("LifecycleConfiguration", {}).get("Rules")
        if rules:
            s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration={
                "Rules": [_lifecycle_rule(r) for r in rules]
            })
        return {
            "Ref": name,
            "Arn": f"arn:aws:s3:::{name}",
            "DomainName": f"{name}.s3.amazonaws.com",
            "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
        }

    def _ensure_bucket(self, name: str) -> None:
        s3 = self.client("s3")
        try:
            s3.head_bucket(Bucket=name)
            return
        except s3.exceptions.ClientError:
            pass
        kwargs = {} if self.region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": self.region}}
        s3.create_bucket(Bucket=name, **kwargs)

    def _bucket_policy(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        document = moto_bucket_policy(p["PolicyDocument"])
        if document["Statement"]:
            self.client("s3").put_bucket_policy(Bucket=p["Bucket"], Policy=json.dumps(document))
        return {"Ref": lid}

    def _bucket_notifications(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve({k: v for k, v in props.items() if k != "ServiceToken"})
        bucket = p["BucketName"]
        # An imported bucket already exists in the real account; on a fresh moto server it does not.
        self._ensure_bucket(bucket)
        s3 = self.client("s3")
        wanted = p.get("NotificationConfiguration", {})
        config: dict[str, list] = {}
        if str(p.get("Managed", "true")).lower() != "true":
            # Like CDK's handler: keep the configurations that this stack did not create.
            current = s3.get_bucket_notification_configuration(Bucket=bucket)
            for kind in ("TopicConfigurations", "QueueConfigurations", "LambdaFunctionConfigurations"):
                config[kind] = list(current.get(kind, []))
            if "EventBridgeConfiguration" in current:
                config["EventBridgeConfiguration"] = current["EventBridgeConfiguration"]
        for kind, items in wanted.items():
            config.setdefault(kind, []).extend(items)
        s3.put_bucket_notification_configuration(
            Bucket=bucket,
            NotificationConfiguration={k: v for k, v in config.items() if v},
        )
        return {"Ref": lid}

    # --- SNS and SQS -------------------------------------------------------------------------------

    def _kms_key(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        kms = self.client("kms")
        kwargs: dict[str, Any] = {"Description": p.get("Description", lid)}
        if "KeyPolicy" in p:
            kwargs["Policy"] = json.dumps(p["KeyPolicy"])
        if p.get("Tags"):
            kwargs["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in p["Tags"]]
        meta = kms.create_key(**kwargs)["KeyMetadata"]
        if p.get("EnableKeyRotation"):
            kms.enable_key_rotation(KeyId=meta["KeyId"])
        return {"Ref": meta["KeyId"], "KeyId": meta["KeyId"], "Arn": meta["Arn"]}

    def _topic(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = _short(self.prefix + (p.get("TopicName") or lid), 256)
        attributes = {k: str(p[k]) for k in ("KmsMasterKeyId", "DisplayName") if k in p}
        tags = [{"Key": t["Key"], "Value": t["Value"]} for t in p.get("Tags", [])]
        arn = self.client("sns").create_topic(Name=name, Attributes=attributes, Tags=tags)["TopicArn"]
        return {"Ref": arn, "TopicArn": arn, "TopicName": name}

    def _topic_policy(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        for topic in p["Topics"]:
            self.client("sns").set_topic_attributes(
                TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps(p["PolicyDocument"])
            )
        return {"Ref": lid}

    def _queue(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = _short(self.prefix + (p.get("QueueName") or lid), 80)
        attributes: dict[str, str] = {}
        for key, value in p.items():
            if key in ("QueueName", "Tags"):
                continue
            if key in ("RedrivePolicy", "RedriveAllowPolicy"):
                value = json.dumps(value)
            elif isinstance(value, bool):
                value = str(value).lower()
            attributes[key] = str(value)
        tags = {t["Key"]: t["Value"] for t in p.get("Tags", [])}
        url = self.client("sqs").create_queue(QueueName=name, Attributes=attributes, tags=tags)["QueueUrl"]
        arn = f"arn:aws:sqs:{self.region}:{self.account_id}:{name}"
        return {"Ref": url, "QueueUrl": url, "Arn": arn, "QueueName": name}

    def _queue_policy(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        for url in p["Queues"]:
            self.client("sqs").set_queue_attributes(
                QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])}
            )
        return {"Ref": lid}

    def _subscription(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        attributes: dict[str, str] = {}
        if "RawMessageDelivery" in p:
            attributes["RawMessageDelivery"] = str(p["RawMessageDelivery"]).lower()
        if "FilterPolicy" in p:
            policy = p["FilterPolicy"]
            if p.get("FilterPolicyScope") == "MessageBody":
                policy = moto_key_encoding(policy)
            attributes["FilterPolicy"] = json.dumps(policy)
        if "FilterPolicyScope" in p:
            attributes["FilterPolicyScope"] = p["FilterPolicyScope"]
        if "RedrivePolicy" in p:
            attributes["RedrivePolicy"] = json.dumps(p["RedrivePolicy"])
        arn = self.client("sns").subscribe(
            TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=p["Endpoint"],
            Attributes=attributes, ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        return {"Ref": arn, "Arn": arn}

    # --- IAM, logs, alarms, EMR --------------------------------------------------------------------

    def _role(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        iam = self.client("iam")
        name = p.get("RoleName") or _short(lid, 64)
        try:
            role = iam.create_role(
                RoleName=name,
                AssumeRolePolicyDocument=json.dumps(p["AssumeRolePolicyDocument"]),
                Description=p.get("Description", ""),
                Path=p.get("Path", "/"),
            )["Role"]
        except iam.exceptions.EntityAlreadyExistsException:
            role = iam.get_role(RoleName=name)["Role"]
        for policy in p.get("Policies", []):
            iam.put_role_policy(RoleName=name, PolicyName=policy["PolicyName"],
                                PolicyDocument=json.dumps(policy["PolicyDocument"]))
        return {"Ref": name, "Arn": role["Arn"], "RoleId": role["RoleId"]}

    def _policy(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        for role in p.get("Roles", []):
            self.client("iam").put_role_policy(RoleName=role, PolicyName=p["PolicyName"],
                                               PolicyDocument=json.dumps(p["PolicyDocument"]))
        return {"Ref": lid, "Id": lid}

    def _managed_policy(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = p.get("ManagedPolicyName") or _short(self.prefix + lid, 128)
        arn = self.client("iam").create_policy(PolicyName=name, PolicyDocument=json.dumps(p["PolicyDocument"]),
                                               Description=p.get("Description", ""))["Policy"]["Arn"]
        return {"Ref": arn, "PolicyArn": arn}

    def _log_group(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        logs = self.client("logs")
        name = p.get("LogGroupName") or _short(lid, 512)
        try:
            logs.create_log_group(logGroupName=name)
        except logs.exceptions.ResourceAlreadyExistsException:
            pass
        if "RetentionInDays" in p:
            logs.put_retention_policy(logGroupName=name, retentionInDays=int(p["RetentionInDays"]))
        arn = f"arn:aws:logs:{self.region}:{self.account_id}:log-group:{name}:*"
        return {"Ref": name, "Arn": arn}

    def _alarm(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = p.get("AlarmName") or lid
        kwargs = {k: p[k] for k in (
            "AlarmDescription", "ComparisonOperator", "EvaluationPeriods", "MetricName", "Namespace",
            "Period", "Statistic", "Threshold", "TreatMissingData", "Dimensions", "DatapointsToAlarm",
            "AlarmActions", "OKActions", "Metrics",
        ) if k in p}
        for k in ("EvaluationPeriods", "Period", "DatapointsToAlarm"):
            if k in kwargs:
                kwargs[k] = int(kwargs[k])
        for query in kwargs.get("Metrics", ()):  # a metric math or Metrics Insights alarm
            if "Period" in query:
                query["Period"] = int(query["Period"])
        if "Threshold" in kwargs:
            kwargs["Threshold"] = float(kwargs["Threshold"])
        self.client("cloudwatch").put_metric_alarm(AlarmName=name, **kwargs)
        return {"Ref": name, "Arn": f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{name}"}

    def _events_rule(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = _short(f"{self.prefix}{lid}", 64)
        events = self.client("events")
        arn = events.put_rule(Name=name, **{k: p[k] for k in ("ScheduleExpression", "EventPattern", "State",
                                                               "Description") if k in p})["RuleArn"]
        if p.get("Targets"):
            events.put_targets(Rule=name, Targets=p["Targets"])
        return {"Ref": name, "Arn": arn}

    def _dashboard(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        name = p.get("DashboardName") or lid
        self.client("cloudwatch").put_dashboard(DashboardName=name, DashboardBody=p["DashboardBody"])
        return {"Ref": name}

    def _emr_application(self, lid: str, props: dict) -> dict[str, str]:
        p = self.resolve(props)
        emr = self.client("emr-serverless")
        name = p.get("Name") or lid
        for app in emr.list_applications().get("applications", []):
            if app["name"] == name and app["state"] not in ("TERMINATED",):
                return {"Ref": app["id"], "ApplicationId": app["id"], "Arn": app["arn"]}
        kwargs: dict[str, Any] = {"name": name, "type": p["Type"], "tags": {"releaseLabel": p["ReleaseLabel"]}}
        if "Architecture" in p:
            kwargs["architecture"] = p["Architecture"]
        if "MaximumCapacity" in p:
            kwargs["maximumCapacity"] = {k[0].lower() + k[1:]: v for k, v in p["MaximumCapacity"].items()}
        if "AutoStartConfiguration" in p:
            kwargs["autoStartConfiguration"] = {"enabled": bool(p["AutoStartConfiguration"]["Enabled"])}
        if "AutoStopConfiguration" in p:
            stop = p["AutoStopConfiguration"]
            kwargs["autoStopConfiguration"] = {"enabled": bool(stop["Enabled"]),
                                               "idleTimeoutMinutes": int(stop.get("IdleTimeoutMinutes", 15))}
        if "MonitoringConfiguration" in p:
            kwargs["monitoringConfiguration"] = _camel_keys(p["MonitoringConfiguration"])
        try:
            app = emr.create_application(releaseLabel=p["ReleaseLabel"], **kwargs)
        except emr.exceptions.ValidationException as e:
            if "release label" not in str(e):
                raise
            app = emr.create_application(releaseLabel=MOTO_RELEASE_LABEL, **kwargs)
        return {"Ref": app["applicationId"], "ApplicationId": app["applicationId"], "Arn": app["arn"]}


def moto_bucket_policy(document: dict) -> dict:
    """Drop conditional Deny statements, which moto's S3 would apply unconditionally.

    moto evaluates a bucket policy's Deny statements on object requests but ignores their Condition, so
    the SSL-only statement (deny when aws:SecureTransport is false) would refuse every request to the
    plain-HTTP local endpoint.
    """
    statements = document.get("Statement", [])
    if isinstance(statements, dict):
        statements = [statements]
    kept = [s for s in statements if not (s.get("Effect") == "Deny" and s.get("Condition"))]
    return {**document, "Statement": kept}


def moto_key_encoding(policy: Any) -> Any:
    """Encode key-prefix filter values as moto encodes event keys (quote_plus, "/" included)."""
    try:
        rules = policy["Records"]["s3"]["object"]["key"]
    except (KeyError, TypeError):
        return policy
    out = copy.deepcopy(policy)
    out["Records"]["s3"]["object"]["key"] = [
        {**r, "prefix": quote_plus(r["prefix"])} if isinstance(r, dict) and "prefix" in r else r for r in rules
    ]
    return out


def _references(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, list):
        for x in node:
            found |= _references(x)
    elif isinstance(node, dict):
        if len(node) == 1 and "Ref" in node and isinstance(node["Ref"], str):
            return {node["Ref"]}
        if len(node) == 1 and "Fn::GetAtt" in node:
            arg = node["Fn::GetAtt"]
            return {arg[0] if isinstance(arg, list) else arg.split(".", 1)[0]}
        if len(node) == 1 and "Fn::Sub" in node:
            arg = node["Fn::Sub"]
            text = arg if isinstance(arg, str) else arg[0]
            found |= {m.split(".", 1)[0] for m in re.findall(r"\$\{([^!}][^}]*)\}", text)}
            if not isinstance(arg, str):
                found |= _references(arg[1])
            return found
        for v in node.values():
            found |= _references(v)
    return found


def _lifecycle_rule(rule: dict) -> dict:
    """CloudFormation's LifecycleConfiguration rule shape -> the S3 API's."""
    out: dict[str, Any] = {"ID": rule.get("Id", "rule"), "Status": rule.get("Status", "Enabled"),
                           "Filter": {"Prefix": rule.get("Prefix", "")}}
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "NoncurrentVersionExpiration" in rule:
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(rule["NoncurrentVersionExpiration"]["NoncurrentDays"])}
    elif "NoncurrentVersionExpirationInDays" in rule:
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": int(rule["NoncurrentVersionExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        out["AbortIncompleteMultipartUpload"] = {
            "DaysAfterInitiation": int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
        }
    return out


def _camel_keys(node: Any) -> Any:
    """CloudFormation's PascalCase property names -> the EMR Serverless API's camelCase."""
    if isinstance(node, dict):
        return {k[0].lower() + k[1:]: _camel_keys(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_camel_keys(x) for x in node]
    return node
