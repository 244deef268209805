"""IAM requests evaluated offline by @cloud-copilot/iam-simulate, on the Node that runs the CDK CLI.

One Node process evaluates a whole batch (simulate.mjs). Each request names its principal, action, resource
and context; the caller supplies the policies that apply to it: the principal's identity policies, and the
resource's policy (bucket, queue, topic, key or a role's trust policy).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("simulate.mjs")


class EvaluatorError(RuntimeError):
    """The evaluator could not run, or refused a request or policy as malformed."""


@dataclass(frozen=True)
class IamRequest:
    principal: str          # the caller: a role session, a role, a user, a service ("lambda.amazonaws.com")
    action: str             # "s3:GetObject"
    resource: str           # the ARN the action is authorized on
    context: dict = field(default_factory=dict, hash=False)  # condition keys -> value (str or list)
    why: str = ""           # what made it: the operation and where it was recorded, for messages

    def key(self) -> tuple:
        return (self.principal, self.action, self.resource, json.dumps(self.context, sort_keys=True))


@dataclass(frozen=True)
class Decision:
    request: IamRequest
    result: str             # Allowed, ImplicitlyDenied, ExplicitlyDenied
    engine: str             # validated, or unvalidated for context keys the validated engine drops (see .mjs)

    @property
    def allowed(self) -> bool:
        return self.result == "Allowed"


def node() -> str:
    found = shutil.which("node")
    if not found:
        raise EvaluatorError("node is not on PATH: the offline IAM evaluator runs on the CDK CLI's Node")
    if not (ROOT / "node_modules" / "@cloud-copilot" / "iam-simulate").exists():
        raise EvaluatorError("node_modules has no @cloud-copilot/iam-simulate: run make setup (npm ci)")
    return found


@lru_cache(maxsize=None)
def _service_actions(service: str) -> dict:
    path = ROOT / "node_modules" / "@cloud-copilot" / "iam-data" / "data" / "actions" / f"{service}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def wildcard_only(action: str) -> bool:
    """Whether the Service Authorization Reference gives `action` no resource type: then a request is authorized
    on "*", and only a statement whose Resource is "*" can allow it."""
    service, name = action.split(":", 1)
    details = _service_actions(service).get(name.lower())
    return details is not None and not details["resourceTypes"]


def simulation(req: IamRequest, identity: list[dict], resource_policy: dict | None, resource_account: str) -> dict:
    sim = {
        "request": {"principal": req.principal, "action": req.action,
                    "resource": {"resource": "*" if wildcard_only(req.action) else req.resource,
                                 "accountId": resource_account},
                    "contextVariables": req.context},
        "identityPolicies": [{"name": f"identity{i}", "policy": p} for i, p in enumerate(identity)],
        "serviceControlPolicies": [], "resourceControlPolicies": [],
    }
    if resource_policy is not None:
        sim["resourcePolicy"] = resource_policy
    return sim


def evaluate(batch: list[tuple[IamRequest, dict]]) -> list[Decision]:
    """Each (request, its simulation) evaluated; a malformed request or policy is an error, never a denial."""
    if not batch:
        return []
    r = subprocess.run([node(), str(SCRIPT)], input=json.dumps([sim for _, sim in batch]), capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    if r.returncode != 0:
        raise EvaluatorError(f"simulate.mjs failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    out = json.loads(r.stdout)
    decisions = []
    for (req, sim), res in zip(batch, out, strict=True):
        if res["decision"] == "Error":
            raise EvaluatorError(f"the evaluator refused {req.action} on {req.resource} for {req.principal} "
                                 f"({req.why}): {json.dumps(res['errors'])[:1500]}\nsimulation: "
                                 f"{json.dumps(sim)[:3000]}")
        decisions.append(Decision(req, res["decision"], res["engine"]))
    return decisions
