"""What the docs tell operators to grant is what the stack's OperatorPolicy holds, statement by statement; and
every action docs/operations.md lists for an operator tool is one the policy grants (the contract test shows
the policy allows every call the tools make)."""
from __future__ import annotations

import re

from devtools.iam.evaluator import ROOT
from tests.iam.contract import doc_actions, operator, tool_actions

README = ROOT / "README.md"
OPERATOR_TOOLS = ("submit-job --apply", "job-runs", "source-state", "redrive-dlq", "compact-table")


def readme_statements() -> dict[str, set[str]]:
    text = README.read_text()
    section = text[text.index("### What the operator needs"):text.index("## The manual")]
    out: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 3 and cells[1].strip().startswith("`"):
            for sid in re.findall(r"`([A-Za-z0-9]+)`", cells[1]):
                out[sid] = set(doc_actions(cells[2]))
    return out


def policy_statements(policy: dict) -> dict[str, set[str]]:
    out = {}
    for s in policy["Statement"]:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        out[s["Sid"]] = set(actions)
    return out


def test_readme_s_table_is_the_operator_policy_statement_by_statement(worlds):
    # The shape with every statement: a customer key, cleaning, an Iceberg database.
    policy = policy_statements(operator(worlds["everything-on"]).identity[0])
    documented = readme_statements()
    assert set(documented) == set(policy), "README's operator table and the OperatorPolicy name other statements"
    for sid, actions in policy.items():
        assert documented[sid] == actions, f"{sid}: README says {sorted(documented[sid])}, the policy {sorted(actions)}"


def test_what_operations_md_lists_for_each_operator_tool_the_policy_grants(worlds):
    granted = set().union(*policy_statements(operator(worlds["everything-on"]).identity[0]).values())
    for tool in OPERATOR_TOOLS:
        listed = tool_actions(tool)
        assert listed, tool
        assert set(listed) <= granted, f"{tool}: docs/operations.md lists {sorted(set(listed) - granted)} " \
                                       "that the OperatorPolicy does not grant"
