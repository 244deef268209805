"""Every AWS operation the product's code names is one the scenario made, by the principal that makes it, so the
contract evaluated it; or it is listed below with why the scenario cannot make it and how it is evaluated."""
from __future__ import annotations

import re
from functools import lru_cache

from devtools.iam.evaluator import ROOT
from tests.iam.contract import unrecorded_operations
from tests.iam.scenario import CLEANER, JOB, ONBOARDER, OPERATOR
from tests.iam.shapes import RECORDED

SERVICES = ("s3", "sqs", "sns", "kms", "sts", "emr-serverless", "logs", "glue")
# Method names that are botocore operations but here call something else (pyiceberg, boto3's Session).
NOT_AWS = {"update_schema": "pyiceberg's Table.update_schema", "get_session": "boto3.session.Session",
           "verify": "not a KMS client's"}


@lru_cache(maxsize=None)
def operations() -> dict[str, set[str]]:
    import botocore.session
    from botocore import xform_name

    session = botocore.session.get_session()
    out: dict[str, set[str]] = {}
    for service in SERVICES:
        for op in session.get_service_model(service).operation_names:
            out.setdefault(xform_name(op), set()).add(op)
    return out


def kind_of(path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith("app/s3sqs/cleaning/"):
        return CLEANER
    if rel.startswith("ops/onboarding/"):
        return ONBOARDER
    return OPERATOR if rel.startswith("ops/") else JOB


def called() -> dict[tuple[str, str], set[str]]:
    """(who, Operation) -> the modules that call it."""
    out: dict[tuple[str, str], set[str]] = {}
    for root in ("app/s3sqs", "ops"):
        for path in (ROOT / root).rglob("*.py"):
            for name in set(re.findall(r"\.([a-z][a-z0-9_]+)\(", path.read_text())):
                if name in operations() and name not in NOT_AWS:
                    for op in operations()[name]:
                        out.setdefault((kind_of(path), op), set()).add(path.relative_to(ROOT).as_posix())
    return out


def test_every_operation_the_code_calls_was_made_in_the_scenario_or_is_evaluated_as_the_code_would_make_it(
        recording, worlds):
    made = {(recording.kind(w), c.operation) for w in recording.runs for c in recording.of(w)}
    listed = unrecorded_operations(worlds[RECORDED])
    code = called()
    missing = {k: v for k, v in code.items() if k not in made and k not in listed}
    lines = [f"  {who} {op}: {sorted(mods)}" for (who, op), mods in sorted(missing.items())]
    assert not missing, ("operations the code calls that the scenario never made: make them in tests/iam/scenario.py, "
                         "or list them in contract.py's unrecorded calls:\n" + "\n".join(lines))
    # Not stale: each listed operation is still called. (The scenario may make one now and then, such as a
    # visibility extension when a batch runs long: it is then evaluated twice, recorded and as listed.)
    assert not [k for k in listed if k not in code], [k for k in listed if k not in code]
