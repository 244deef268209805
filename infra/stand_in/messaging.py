"""KMS, SNS and SQS on the stand-in: keys, topics, queues, their policies, and subscriptions."""
from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

from infra.stand_in.template import short

if TYPE_CHECKING:
    from infra.stand_in.deployer import Deployer


def kms_key(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    kms = d.client("kms")
    kwargs: dict[str, Any] = {"Description": p.get("Description", lid)}
    if "KeyPolicy" in p:
        kwargs["Policy"] = json.dumps(p["KeyPolicy"])
    if p.get("Tags"):
        kwargs["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in p["Tags"]]
    meta = kms.create_key(**kwargs)["KeyMetadata"]
    if p.get("EnableKeyRotation"):
        kms.enable_key_rotation(KeyId=meta["KeyId"])
    return {"Ref": meta["KeyId"], "KeyId": meta["KeyId"], "Arn": meta["Arn"]}


def topic(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    name = short(d.prefix + (p.get("TopicName") or lid), 256)
    attributes = {k: str(p[k]) for k in ("KmsMasterKeyId", "DisplayName") if k in p}
    tags = [{"Key": t["Key"], "Value": t["Value"]} for t in p.get("Tags", [])]
    arn = d.client("sns").create_topic(Name=name, Attributes=attributes, Tags=tags)["TopicArn"]
    return {"Ref": arn, "TopicArn": arn, "TopicName": name}


def topic_policy(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    for arn in p["Topics"]:
        d.client("sns").set_topic_attributes(
            TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps(p["PolicyDocument"])
        )
    return {"Ref": lid}


def queue(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """Created with all its attributes, RedrivePolicy included (moto accepts RedriveAllowPolicy, not keeping it)."""
    p = d.resolve(props)
    name = short(d.prefix + (p.get("QueueName") or lid), 80)
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
    url = d.client("sqs").create_queue(QueueName=name, Attributes=attributes, tags=tags)["QueueUrl"]
    arn = f"arn:aws:sqs:{d.region}:{d.account_id}:{name}"
    return {"Ref": url, "QueueUrl": url, "Arn": arn, "QueueName": name}


def queue_policy(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    for url in p["Queues"]:
        d.client("sqs").set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(p["PolicyDocument"])})
    return {"Ref": lid}


def subscription(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
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
    arn = d.client("sns").subscribe(
        TopicArn=p["TopicArn"], Protocol=p["Protocol"], Endpoint=p["Endpoint"],
        Attributes=attributes, ReturnSubscriptionArn=True,
    )["SubscriptionArn"]
    return {"Ref": arn, "Arn": arn}


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


HANDLERS = {
    "AWS::KMS::Key": kms_key,
    "AWS::SNS::Topic": topic,
    "AWS::SNS::TopicPolicy": topic_policy,
    "AWS::SQS::Queue": queue,
    "AWS::SQS::QueuePolicy": queue_policy,
    "AWS::SNS::Subscription": subscription,
}
