"""Tests start the same local moto server the demo uses."""
from ops.local_aws import FAKE_ENV, MotoServer, free_port, start_moto_server  # noqa: F401
