import os

import pytest

import infra.app
from devtools.local_aws import EXAMPLE_CDK_JSON, FAKE_ENV, start_moto_server

# The tests' stack is the two-account example's, whatever the checkout's cdk.json holds (the quick start has
# the reader edit it): every in-process synth reads it. A subprocess that synthesizes is given it (--cdk-json).
infra.app.CDK_JSON = EXAMPLE_CDK_JSON

# Fake credentials for every test: nothing may reach real AWS.
for _k, _v in FAKE_ENV.items():
    os.environ[_k] = _v
os.environ.pop("AWS_PROFILE", None)

# A test's Spark JVM lives for seconds to minutes: compiling with C1 only and collecting with the serial
# GC costs it about a third less CPU (25 s against 35-43 s for one short job, measured), and what it
# does is unchanged. Every JVM the tests start (in-process sessions, spark-submit jobs, the chaos runs)
# inherits this.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {TEST_JVM_OPTIONS}".strip()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory):
    """One moto server for the session; tests use unique resource names or call .reset()."""
    server = start_moto_server(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def moto_endpoint(moto_server) -> str:
    return moto_server.endpoint_url
