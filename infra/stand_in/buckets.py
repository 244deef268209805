"""S3 on the stand-in: buckets with their settings, bucket policies, and CDK's notification configuration."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from infra.stand_in.template import short

if TYPE_CHECKING:
    from infra.stand_in.deployer import Deployer


def bucket(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """Created, named after its logical id in lower case, with encryption, versioning, public access block, tags
    and lifecycle rules; not server access logging, which moto does not deliver."""
    p = d.resolve(props)
    name = short(d.prefix + (p.get("BucketName") or lid.lower()), 63)
    ensure_bucket(d, name)
    s3 = d.client("s3")
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
            "Rules": [lifecycle_rule(r) for r in rules]
        })
    return {
        "Ref": name,
        "Arn": f"arn:aws:s3:::{name}",
        "DomainName": f"{name}.s3.amazonaws.com",
        "RegionalDomainName": f"{name}.s3.{d.region}.amazonaws.com",
    }


def ensure_bucket(d: Deployer, name: str) -> None:
    s3 = d.client("s3")
    try:
        s3.head_bucket(Bucket=name)
        return
    except s3.exceptions.ClientError:
        pass
    kwargs = {} if d.region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": d.region}}
    s3.create_bucket(Bucket=name, **kwargs)


def bucket_policy(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    document = moto_bucket_policy(p["PolicyDocument"])
    if document["Statement"]:
        d.client("s3").put_bucket_policy(Bucket=p["Bucket"], Policy=json.dumps(document))
    return {"Ref": lid}


def bucket_notifications(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    """CDK's Lambda-backed resource, done as its handler does: merged with what the bucket has unless `Managed`."""
    p = d.resolve({k: v for k, v in props.items() if k != "ServiceToken"})
    name = p["BucketName"]
    # An imported bucket already exists in the real account; on a fresh moto server it does not.
    ensure_bucket(d, name)
    s3 = d.client("s3")
    config: dict[str, list] = {}
    if str(p.get("Managed", "true")).lower() != "true":
        # Like CDK's handler: keep the configurations that this stack did not create.
        current = s3.get_bucket_notification_configuration(Bucket=name)
        for kind in ("TopicConfigurations", "QueueConfigurations", "LambdaFunctionConfigurations"):
            config[kind] = list(current.get(kind, []))
        if "EventBridgeConfiguration" in current:
            config["EventBridgeConfiguration"] = current["EventBridgeConfiguration"]
    for kind, items in p.get("NotificationConfiguration", {}).items():
        config.setdefault(kind, []).extend(items)
    s3.put_bucket_notification_configuration(
        Bucket=name,
        NotificationConfiguration={k: v for k, v in config.items() if v},
    )
    return {"Ref": lid}


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


def lifecycle_rule(rule: dict) -> dict:
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


HANDLERS = {
    "AWS::S3::Bucket": bucket,
    "AWS::S3::BucketPolicy": bucket_policy,
    "Custom::S3BucketNotifications": bucket_notifications,
}
