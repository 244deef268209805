"""IAM on the stand-in: roles with their inline policies, policies attached to roles, managed policies."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from infra.stand_in.template import short

if TYPE_CHECKING:
    from infra.stand_in.deployer import Deployer


def role(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    iam = d.client("iam")
    name = p.get("RoleName") or short(lid, 64)
    try:
        made = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(p["AssumeRolePolicyDocument"]),
                               Description=p.get("Description", ""), Path=p.get("Path", "/"))["Role"]
    except iam.exceptions.EntityAlreadyExistsException:
        made = iam.get_role(RoleName=name)["Role"]
    for policy in p.get("Policies", []):
        iam.put_role_policy(RoleName=name, PolicyName=policy["PolicyName"],
                            PolicyDocument=json.dumps(policy["PolicyDocument"]))
    return {"Ref": name, "Arn": made["Arn"], "RoleId": made["RoleId"]}


def role_policy(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    for name in p.get("Roles", []):
        d.client("iam").put_role_policy(RoleName=name, PolicyName=p["PolicyName"],
                                        PolicyDocument=json.dumps(p["PolicyDocument"]))
    return {"Ref": lid, "Id": lid}


def managed_policy(d: Deployer, lid: str, props: dict) -> dict[str, str]:
    p = d.resolve(props)
    name = p.get("ManagedPolicyName") or short(d.prefix + lid, 128)
    arn = d.client("iam").create_policy(PolicyName=name, PolicyDocument=json.dumps(p["PolicyDocument"]),
                                        Description=p.get("Description", ""))["Policy"]["Arn"]
    return {"Ref": arn, "PolicyArn": arn}


HANDLERS = {
    "AWS::IAM::Role": role,
    "AWS::IAM::Policy": role_policy,
    "AWS::IAM::ManagedPolicy": managed_policy,
}
