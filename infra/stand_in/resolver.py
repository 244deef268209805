"""Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split, resolved against what was created on moto."""
from __future__ import annotations

import re
from typing import Any

from infra import STACK_NAME
from infra.stand_in import StandInError
from infra.stand_in.template import SUB_VARIABLE, short

NO_VALUE = object()


class Resolver:
    """Resolves a template's intrinsics with the moto account's pseudo parameters and each created resource's
    physical names and attributes (`physical`, filled in as they are made)."""

    def __init__(self, resources: dict[str, dict], skipped: set[str], account_id: str, region: str,
                 prefix: str) -> None:
        self.resources = resources
        self.skipped = skipped
        self.account_id = account_id
        self.region = region
        self.prefix = prefix
        self.physical: dict[str, dict[str, str]] = {}

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.resolve(x) for x in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                lid, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.attr(lid, attr)
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
        return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not NO_VALUE}

    def ref(self, name: str) -> Any:
        pseudo = {
            "AWS::AccountId": self.account_id,
            "AWS::Region": self.region,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": STACK_NAME,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account_id}:stack/{STACK_NAME}/local",
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        return self.attr(name, "Ref")

    def attr(self, lid: str, attr: str) -> str:
        if lid in self.skipped and self.resources[lid]["Type"] == "AWS::Lambda::Function":
            # Named as a deploy would, for what points at it (an alarm's dimension, a schedule's target).
            name = short(f"{self.prefix}{lid}", 64)
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
                return str(self.attr(lid, attr))
            return str(self.ref(name))

        return SUB_VARIABLE.sub(replace, text)
