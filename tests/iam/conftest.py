"""The IAM contract's fixtures: one recorded scenario per session, and each deploy shape's policies."""
from __future__ import annotations

import pytest

from devtools.iam.world import World, world_of
from devtools.local_aws import start_moto_server
from devtools.local_spark import BENCH_SPARKS
from infra.local_stand_in import deploy_stand_in, synth_template
from tests.iam.scenario import Recording, Scenario
from tests.iam.shapes import RECORDED, SHAPES


@pytest.fixture(scope="session")
def recording(tmp_path_factory) -> Recording:
    """Every process of the product run once against the recorded shape's stand-in; the job on EMR's Spark
    (4.0.2) when it is set up here."""
    spark40 = BENCH_SPARKS["4.0.2"]
    scenario = Scenario(tmp_path_factory.mktemp("iam-scenario"), SHAPES[RECORDED],
                        spark_python=spark40 if spark40.exists() else None)
    return scenario.record()


@pytest.fixture(scope="session")
def worlds(tmp_path_factory) -> dict[str, World]:
    """Each shape's template deployed on a moto server of its own (names and ARNs as the stand-in gives them),
    and its policies; an imported bucket's policy is what the stack asks its owner to add."""
    import json

    out = {}
    server = start_moto_server(tmp_path_factory.mktemp("iam-shapes") / "moto.log")
    try:
        for name, context in SHAPES.items():
            server.reset()
            stand_in = deploy_stand_in(synth_template(context), server.endpoint_url)
            extra = {}
            if "SourceBucketPolicyStatements" in stand_in.outputs:
                extra[stand_in.outputs["SourceBucketName"]] = json.loads(stand_in.outputs["SourceBucketPolicyStatements"])
            out[name] = world_of(stand_in, extra)
    finally:
        server.stop()
    return out
