"""Every AWS call the product makes, allowed by the policies of each deploy shape (issue: "sufficient and least").

The scenario (scenario.py) runs every process once against the stand-in of one shape and records each request
with who made it; contract.py translates the calls into every shape's names, adds what AWS does for the product
on its own, and devtools.iam evaluates each request against that shape's synthesized identity, resource, key and
trust policies. Nothing here is mocked but AWS's enforcement, which moto lacks and the evaluator supplies.
"""
from __future__ import annotations

import pytest

from devtools.iam.evaluator import evaluate
from devtools.iam.world import world_of
from tests.iam.contract import Evaluation, modelled, recorded, unrecorded
from tests.iam.scenario import CLEANER, JOB, ONBOARDER, OPERATOR
from tests.iam.shapes import RECORDED, SHAPES

# Every process the issue names, and what each ran in the scenario: a run that stops being recorded fails here.
EXPECTED_RUNS = {
    "job: parquet", "job: delta", "job: iceberg", "submit-job --apply", "job-runs list", "job-runs show",
    "job-runs show (an unknown run)", "job-runs logs", "job-runs cancel", "source-state summary",
    "source-state files", "source-state lookup", "redrive-dlq inspect", "redrive-dlq redrive", "compact-table delta",
    "compact-table iceberg",
    "source-state clean --apply", "scheduled source cleaner", "onboard-account", "onboard-account --revoke",
    "onboard-account --share-queue",
}


def test_the_scenario_ran_every_process_and_each_made_calls(recording):
    assert set(recording.runs) == EXPECTED_RUNS
    silent = [what for what in recording.runs if not recording.of(what)]
    assert not silent, f"runs that made no AWS call (was the key label lost?): {silent}"
    kinds = {recording.kind(w) for w in recording.runs}
    assert kinds == {JOB, OPERATOR, CLEANER, ONBOARDER}
    # The executors read through pyarrow, the Delta writer through delta-rs: their calls are recorded too.
    job_ops = {c.operation for w in recording.runs if w.startswith("job:") for c in recording.of(w)}
    assert {"ReceiveMessage", "DeleteMessageBatch", "GetObject", "HeadObject", "ListObjectsV2", "PutObject",
            "CreateTable", "UpdateTable"} <= job_ops
    # The Delta run infers its schema and stores it beside its state; the Parquet run backfills by listing.
    inferred = [c for c in recording.of("job: delta") if c.operation == "PutObject" and "/_schemas/" in c.params["Key"]]
    listed = [c for c in recording.of("job: parquet") if c.operation == "ListObjectsV2"
              and c.params["Bucket"] == recording.stand_in.outputs["SourceBucketName"]]
    assert inferred and listed


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_call_is_allowed_by_the_policy_meant_to_allow_it(shape, recording, worlds):
    src, dst = world_of(recording.stand_in), worlds[shape]
    ev = Evaluation()
    recorded(ev, recording, src, dst, SHAPES[shape])
    unrecorded(ev, dst)
    modelled(ev, dst)
    decisions = evaluate(ev.batch)
    denied = [d for d in decisions if not d.allowed]
    report = "\n".join(f"  {d.result}: {d.request.principal} {d.request.action} {d.request.resource} "
                       f"{ {k: v for k, v in d.request.context.items() if not k.startswith('aws:Principal')} } "
                       f"({d.request.why})" for d in denied)
    print(f"\n{shape}: {len(decisions)} requests evaluated, by principal {ev.by_principal}; left out: {ev.skipped}")
    assert not denied, f"{len(denied)} of {len(decisions)} requests denied in shape {shape}:\n{report}"
    # Not vacuous: the job role, the operator and (where the shape has them) the cleaner and a reader in the
    # consumer's own account each had requests evaluated.
    assert ev.by_principal.get("job role of ingest", 0) > 50 and ev.by_principal.get("operator (OperatorPolicy)", 0) > 20
    if "SourceCleaning" in dst.outputs:
        assert ev.by_principal.get("source cleaner role", 0) > 5
