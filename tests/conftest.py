import os

import pytest

from ops.local_aws import FAKE_ENV, start_moto_server

# Fake credentials for every test: nothing may reach real AWS.
for _k, _v in FAKE_ENV.items():
    os.environ[_k] = _v
os.environ.pop("AWS_PROFILE", None)


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
