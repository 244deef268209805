"""What the stand-in reads from a template before it calls anything: references, what it skips, creation order."""
from __future__ import annotations

import re
from typing import Any

from infra.stand_in import StandInError

PSEUDO = ("AWS::AccountId", "AWS::Region", "AWS::Partition", "AWS::URLSuffix", "AWS::StackName", "AWS::StackId",
          "AWS::NoValue")
SKIPPED_TYPES = {"AWS::Lambda::Function", "AWS::Lambda::Permission", "AWS::CDK::Metadata"}
SUB_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")


def short(name: str, limit: int) -> str:
    """Deterministic name within a service's length limit; keeps the logical id's hash suffix."""
    return name if len(name) <= limit else name[: limit - 9] + name[-9:]


def references(node: Any) -> set[str]:
    """The logical ids (and pseudo parameters) a template fragment refers to."""
    found: set[str] = set()
    if isinstance(node, list):
        for x in node:
            found |= references(x)
    elif isinstance(node, dict):
        if len(node) == 1 and "Ref" in node and isinstance(node["Ref"], str):
            return {node["Ref"]}
        if len(node) == 1 and "Fn::GetAtt" in node:
            arg = node["Fn::GetAtt"]
            return {arg[0] if isinstance(arg, list) else arg.split(".", 1)[0]}
        if len(node) == 1 and "Fn::Sub" in node:
            arg = node["Fn::Sub"]
            text = arg if isinstance(arg, str) else arg[0]
            found |= {m.split(".", 1)[0] for m in SUB_VARIABLE.findall(text)}
            if not isinstance(arg, str):
                found |= references(arg[1])
            return found
        for v in node.values():
            found |= references(v)
    return found


def skipped_resources(template: dict) -> set[str]:
    """The Lambda functions, and the IAM role and policies that exist only to serve them (a role that
    something else uses too, such as the source cleaner's, is created)."""
    resources = template.get("Resources", {})
    skipped = {lid for lid, r in resources.items() if r["Type"] in SKIPPED_TYPES}
    for lid in list(skipped):
        role = resources[lid].get("Properties", {}).get("Role")
        if isinstance(role, dict) and "Fn::GetAtt" in role and not _used_elsewhere(template, role["Fn::GetAtt"][0]):
            skipped.add(role["Fn::GetAtt"][0])
    for lid, r in resources.items():
        if r["Type"] == "AWS::IAM::Policy":
            roles = r.get("Properties", {}).get("Roles", [])
            if roles and all(isinstance(x, dict) and x.get("Ref") in skipped for x in roles):
                skipped.add(lid)
    return skipped


def _used_elsewhere(template: dict, role: str) -> bool:
    """Whether anything but Lambda functions and the policies attached to `role` refers to it."""
    users = [r.get("Properties", {}) for r in template.get("Resources", {}).values() if r["Type"] not in SKIPPED_TYPES
             and not (r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r.get("Properties", {}).get("Roles", []))]
    return any(role in references(p) for p in users + [template.get("Outputs", {})])


def creation_order(resources: dict[str, dict], skipped: set[str]) -> list[str]:
    """The resources to create, each after what it refers to or depends on; a cycle is an error."""
    deps: dict[str, set[str]] = {}
    for lid, r in resources.items():
        if lid in skipped:
            continue
        props = r.get("Properties", {})
        if r["Type"].startswith("Custom::"):
            props = {k: v for k, v in props.items() if k != "ServiceToken"}
        found = references(props)
        depends = r.get("DependsOn", [])
        found |= set([depends] if isinstance(depends, str) else depends)
        deps[lid] = {d for d in found if d in resources and d not in skipped}
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

    for lid in resources:  # template order keeps the result deterministic
        if lid not in skipped:
            visit(lid, ())
    return order
