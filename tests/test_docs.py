"""The docs agree with the code: every flag of every operator tool is documented, one outputs file name is used
throughout, and every link points at a file and heading that exist."""
from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from ops.compaction import cli as compaction_cli
from ops.emr import cli as emr_cli
from ops.local_stack import cli as local_stack_cli
from ops.onboarding import cli as onboarding_cli
from ops.packaging import cli as packaging_cli
from ops.redrive import cli as redrive_cli
from ops.state import cli as state_cli

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOOL_DOCS = (REPO / "docs" / "emr.md", REPO / "docs" / "operations.md")
PARSERS = {"package-job": packaging_cli.parser, "submit-job": emr_cli.submit_parser, "job-runs": emr_cli.runs_parser,
           "onboard-account": onboarding_cli.parser, "redrive-dlq": redrive_cli.parser,
           "local-stack": local_stack_cli.parser, "source-state": state_cli.parser,
           "compact-table": compaction_cli.parser}


def flags(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, str]]:
    """(command, flag) for every flag --help shows, subcommands included."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                found += flags(subparser, f"{name} {sub}")
        elif action.help != argparse.SUPPRESS:
            found += [(name, f) for f in action.option_strings if f.startswith("--") and f != "--help"]
    return found


ALL_FLAGS = sorted({pair for tool, make in PARSERS.items() for pair in flags(make(), tool)})


@pytest.mark.parametrize("command, flag", ALL_FLAGS, ids=[f"{c} {f}" for c, f in ALL_FLAGS])
def test_every_flag_in_every_help_is_documented(command, flag):
    text = "\n".join(p.read_text() for p in TOOL_DOCS)
    assert re.search("`" + re.escape(flag) + r"[`\s=\[]", text), f"{command} {flag} is not in docs/emr.md or docs/operations.md"


# ---------------------------------------------------------------- each command's flag tables, held to its parser

# A flag table's header names the command(s) it documents: "`compact-table` flag", "`source-state summary`,
# `files`, `lookup` flag", or "`job-runs` flag" with a Commands column naming each row's subcommands ("all").
FLAG_HEADER = re.compile(r"(`[a-z-]+(?: [a-z]+)?`(?:, `[a-z]+`)*) flag")
# Takes submit-job's flags (one definition, ops/emr/cli.add_run_flags), documented with them;
# test_every_flag_in_every_help_is_documented still holds each.
PROSE_ONLY = {"local-stack run-job"}


def parser_flags() -> dict[str, set[str]]:
    """Each command ("tool" or "tool subcommand") -> the flags its --help shows."""
    out: dict[str, set[str]] = {}
    for command, flag in ALL_FLAGS:
        out.setdefault(command, set()).add(flag)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(doc: Path) -> list[tuple[list[str], list[list[str]]]]:
    """(header cells, rows of cells) of every table in a document."""
    lines, found = doc.read_text().splitlines(), []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip()) and \
                not (i and lines[i - 1].startswith("|")):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            found.append((_cells(line), rows))
    return found


@functools.cache
def documented_flags() -> dict[str, set[str]]:
    """Each command -> the flags its flag tables in docs/emr.md and docs/operations.md give it."""
    known = parser_flags()
    out: dict[str, set[str]] = {}
    for doc in TOOL_DOCS:
        for header, rows in tables(doc):
            m = FLAG_HEADER.fullmatch(header[0])
            if not m:
                assert header[0] != "Flag", f"{doc.name}: a flag table whose header names no command: {header}"
                continue
            first, *subs = re.findall(r"`([^`]+)`", m.group(1))
            tool = first.split()[0]
            named = [first] + [f"{tool} {sub}" for sub in subs]
            for row in rows:
                commands = named
                if "Commands" in header:
                    cell = row[header.index("Commands")]
                    commands = sorted(c for c in known if c.startswith(f"{tool} ")) if cell == "all" else \
                        [f"{tool} {sub.strip()}" for sub in cell.split(",")]
                for command in commands:
                    assert command in known, f"{doc.name}: no command {command!r} (table {header[0]!r})"
                    out.setdefault(command, set()).update(re.findall(r"`(--[a-z][a-z0-9-]*)", row[0]))
    return out


@pytest.mark.parametrize("command", sorted(c for c in parser_flags() if c not in PROSE_ONLY))
def test_each_command_s_flag_tables_list_exactly_its_parser_s_flags(command):
    """Both ways: every flag --help shows is in a table of the command, and every flag there is one it takes."""
    documented, parsed = documented_flags().get(command, set()), parser_flags()[command]
    assert not parsed - documented, f"{command}: not in its flag tables: {sorted(parsed - documented)}"
    assert not documented - parsed, f"{command}: in its flag tables, not a flag of it: {sorted(documented - parsed)}"


def test_the_queue_names_the_operations_page_shows_are_the_stack_s():
    """A consumer's queue has the name the stack gives it (<stack>-<consumer>); its DLQ the name CloudFormation
    generates from the template's logical id (<stack>-<logical id>-<suffix>)."""
    from infra import STACK_NAME
    from infra.local_stand_in import synth_template

    queues = [r for r in synth_template()["Resources"].items() if r[1]["Type"] == "AWS::SQS::Queue"]
    named = {r.get("Properties", {}).get("QueueName") for _, r in queues} - {None}
    generated = {lid for lid, r in queues if "QueueName" not in r.get("Properties", {})}
    shown = re.findall(r"https://sqs\.[a-z0-9-]+\.amazonaws\.com/\d{12}/([\w-]+)",
                       (REPO / "docs" / "operations.md").read_text())
    assert shown
    for name in shown:
        m = re.fullmatch(rf"{STACK_NAME}-(\w+)-[A-Z0-9]{{12,13}}", name)
        assert name in named or (m and m.group(1) in generated), f"{name} is not a queue name of the stack"


def test_one_outputs_file_name_everywhere():
    for doc in DOCS:
        for m in re.finditer(r"[\w.-]*outputs[\w-]*\.json", doc.read_text()):
            assert m.group() == "cdk-outputs.json", f"{doc.name}: {m.group()}"


def test_no_document_outside_the_project_is_cited():
    """The project's text names only its own files."""
    outside = ("DESIGN" + ".md", "FACTS" + ".md")
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        path = REPO / name
        if path.suffix in (".py", ".md", ".toml", ".json", "") and path.is_file():
            text = path.read_text(errors="replace")
            assert not [o for o in outside if o in text], name


def _anchors(doc: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+\s+(.*)$", doc.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def test_links_between_the_docs_resolve():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            assert dest.exists(), f"{doc.name}: link to {target}"
            if anchor and dest.suffix == ".md":
                assert anchor in _anchors(dest), f"{doc.name}: no heading #{anchor} in {dest.name}"


# ---------------------------------------------------------------- README.md's quick start

QUICK_START = "## Quick start: a rehearsal here, then AWS"
REHEARSAL = "3. **Rehearse**"


def quick_start_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(QUICK_START)
    end = text.index("\n## ", start + len(QUICK_START))
    return text[start:end]


def _blocks(section: str, lang: str) -> list[str]:
    """The fenced code blocks of one language, without their indentation."""
    return [textwrap.dedent(b) for b in re.findall(rf"^[ ]*```{lang}\n(.*?)^[ ]*```", section, flags=re.M | re.S)]


def _commands(blocks: list[str]) -> list[str]:
    """Each shell command of the blocks, in order, continuation lines joined."""
    commands = []
    for block in blocks:
        commands += [c.strip() for c in re.split(r"(?<!\\)\n", block) if c.strip()]
    return commands


def quick_start_context() -> dict:
    """The cdk.json context the section tells the reader to set."""
    (block,) = _blocks(quick_start_section(), "json")
    return json.loads(block)


def quick_start_commands() -> list[str]:
    """The AWS steps' shell commands, in order (all but the rehearsal's)."""
    section = quick_start_section()
    rehearsal = section.index(REHEARSAL), section.index("4. **Deploy**")
    return _commands(_blocks(section[:rehearsal[0]], "bash") + _blocks(section[rehearsal[1]:], "bash"))


def rehearsal_commands() -> list[str]:
    """The rehearsal's shell commands, in order."""
    section = quick_start_section()
    return _commands(_blocks(section[section.index(REHEARSAL):section.index("4. **Deploy**")], "bash"))


def test_the_readme_is_a_front_door_and_the_quick_start_is_near_its_top():
    text = (REPO / "README.md").read_text()
    # At most 300 lines: the manual is in docs/, and the README says where each part of it is.
    assert text.count("\n") <= 300
    assert text.index(QUICK_START) < text.index("## The manual")
    for page in ("docs/source.md", "docs/job.md", "docs/monitoring.md", "docs/deploy.md", "docs/emr.md",
                 "docs/operations.md", "docs/layout.md", "docs/limits.md"):
        assert f"]({page}" in text, page
    section = quick_start_section()
    # The policy to attach, and what it holds (tests/iam/test_operator_docs.py checks the whole table).
    for action in ("OperatorPolicyArn", "emr-serverless:GetApplication", "iam:PassRole", "logs:DescribeLogStreams",
                   "s3:GetObject"):
        assert action in section
    steps = "\n".join(quick_start_commands())
    for step in ("npx cdk deploy --outputs-file cdk-outputs.json", "package-job", "--apply --wait", "aws s3 cp",
                 "job-runs logs", "source-state files --consumer orders", "npx cdk destroy"):
        assert step in steps, step


def test_the_source_s_page_lists_every_auto_loader_option_the_source_knows():
    from s3sqs.config.options import AUTO_LOADER_RENAMED, AUTO_LOADER_SAME, AUTO_LOADER_UNSUPPORTED

    text = (REPO / "docs" / "source.md").read_text()
    section = text[text.index("#### Coming from Auto Loader"):text.index("The output always has exactly")]
    for name in [f"cloudFiles.{n}" for n in AUTO_LOADER_SAME] + list(AUTO_LOADER_RENAMED) + list(AUTO_LOADER_UNSUPPORTED):
        short = name.rsplit(".", 1)[-1] if name.startswith("cloudFiles.schemaInference") else name
        assert f"`{name}`" in section or f"`.{short}`" in section, name


def test_the_source_s_page_lists_every_format_option_in_its_format_s_row():
    from s3sqs.config.format_options import FORMAT_OPTIONS

    text = (REPO / "docs" / "source.md").read_text()
    table = text[text.index("### Formats"):]
    for fmt, options in FORMAT_OPTIONS.items():
        row = next(line for line in table.splitlines() if re.match(rf"\| [^|]*`{fmt}`", line))
        assert not [name for name in options if f"`{name}" not in row], fmt
