"""infra/contract.py: the facts the stack and the operator tools share, readable without the CDK."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.config import ConfigError, parse_config
from infra.contract import CONSUMER_NAME_RE, DEFAULT_MAX_RECEIVE_COUNT

REPO = Path(__file__).resolve().parents[2]
READER = ["arn:aws:iam::123456789012:role/reader"]


def test_every_ops_module_and_the_contract_load_without_starting_the_cdk():
    probe = (
        "import importlib, pkgutil, sys, ops, infra.config, infra.contract\n"
        "for m in pkgutil.walk_packages(ops.__path__, 'ops.'):\n"
        "    importlib.import_module(m.name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs', 'cdk_nag'))\n"
        "assert not loaded, loaded\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name, ok", [
    ("a", True), ("raw-events", True), ("x" * 32, True), ("x" * 33, False), ("9lives", False),
    ("ends-", False), ("Upper", False), ("under_score", False), ("abc\n", False), ("", False),
])
def test_the_stack_accepts_exactly_the_consumer_names_the_rule_allows(name, ok):
    assert bool(CONSUMER_NAME_RE.match(name)) is ok
    context = {"sourceBucket": {"mode": "new"}, "consumers": [{"name": name, "accountId": "123456789012"}],
               "crossAccountPrincipals": READER}
    if ok:
        assert parse_config(context).consumers[0].name == name
    else:
        with pytest.raises(ConfigError, match=r"consumers\[0\]\.name"):
            parse_config(context)


def test_a_consumer_without_max_receive_count_gets_the_contract_default():
    cfg = parse_config({"sourceBucket": {"mode": "new"}, "consumers": [{"name": "a", "accountId": "123456789012"}],
                        "crossAccountPrincipals": READER})
    assert cfg.consumers[0].max_receive_count == DEFAULT_MAX_RECEIVE_COUNT
