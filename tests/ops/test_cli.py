"""ops/cli.py: the conventions every operator command line shares, and how each of them ends."""
from __future__ import annotations

import argparse
import json

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

from ops import cli
from ops.errors import OperatorError
from s3sqs.core.names import did_you_mean
from ops.stack_outputs import OutputsError


def run(command, capsys, debug=False):
    rc = cli.run("some-tool", command, interrupted="nothing was changed", debug=debug)
    return rc, capsys.readouterr()


def raises(exc):
    def command():
        raise exc
    return command


def test_the_command_s_own_exit_code_is_returned(capsys):
    assert run(lambda: 0, capsys)[0] == 0
    assert run(lambda: cli.NOT_DONE, capsys)[0] == 1


def test_an_operator_error_is_one_line_on_stderr_and_exit_2(capsys):
    rc, out = run(raises(OperatorError("--bucket 'x' is not a valid S3 bucket name")), capsys)
    assert rc == cli.ERROR_EXIT == 2 and out.out == ""
    assert out.err == "some-tool: error: --bucket 'x' is not a valid S3 bucket name\n"


def test_debug_shows_the_traceback_before_the_line(capsys):
    rc, out = run(raises(OperatorError("bad")), capsys, debug=True)
    assert rc == 2 and out.err.startswith("Traceback") and out.err.endswith("some-tool: error: bad\n")


def test_aws_errors_are_one_line_too_with_the_fix_where_it_is_known(capsys):
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetQueueAttributes")
    rc, out = run(raises(denied), capsys)
    assert rc == 2 and out.err.startswith("some-tool: AWS error: ") and "AccessDenied" in out.err
    assert out.err.count("\n") == 1
    rc, out = run(raises(EndpointConnectionError(endpoint_url="http://127.0.0.1:1")), capsys)
    assert rc == 2 and "Could not connect" in out.err and "check --endpoint-url" in out.err
    rc, out = run(raises(NoCredentialsError()), capsys)
    assert rc == 2 and out.err.startswith("some-tool: error: no AWS credentials found: set AWS_PROFILE")
    assert out.err.count("\n") == 1


def test_ctrl_c_exits_130_and_says_what_it_left(capsys):
    rc, out = run(raises(KeyboardInterrupt()), capsys)
    assert rc == 130 and out.err == "some-tool: interrupted; nothing was changed\n"


def test_a_bug_keeps_its_traceback():
    with pytest.raises(ZeroDivisionError):
        cli.run("some-tool", lambda: 1 // 0, interrupted="")


@pytest.mark.parametrize("kind, text, message", [
    (cli.positive_int, "0", "must be at least 1"),
    (cli.positive_int, "1.5", "is not a whole number"),
    (cli.positive_float, "0", "must be greater than 0"),
    (cli.positive_float, "fast", "is not a number"),
])
def test_argument_types_refuse_with_a_reason(kind, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        kind(text)


def test_argument_types_accept():
    assert cli.positive_int("3") == 3 and cli.positive_float("0.5") == 0.5
    assert cli.comma_list(" a, b,,c ") == ("a", "b", "c")


def test_enum_values_are_checked_with_a_did_you_mean():
    state = cli.choice("a job run state", ("RUNNING", "SUCCESS"), fold=str.upper)
    assert state("running") == "RUNNING"
    with pytest.raises(argparse.ArgumentTypeError) as e:
        state("RUNNNING")
    assert str(e.value) == "'RUNNNING' is not a job run state (did you mean 'RUNNING'?); one of: RUNNING, SUCCESS"
    with pytest.raises(argparse.ArgumentTypeError, match=r"^'xyz' is not a job run state; one of"):
        state("xyz")


def test_did_you_mean_ignores_case_and_stays_quiet_when_nothing_is_close():
    assert did_you_mean("ingst", ["ingest", "analytics"]) == " (did you mean 'ingest'?)"
    assert did_you_mean("INGEST", ["ingest"]) == " (did you mean 'ingest'?)"
    assert did_you_mean("zzz", ["ingest"]) == ""


def test_common_flags_and_their_defaults():
    p = cli.parser("t", "d")
    cli.add_stack_args(p)
    cli.add_aws_args(p)
    cli.add_consumer_arg(p)
    cli.add_apply_args(p, act="do it")
    cli.add_limit_arg(p, what="things")
    cli.add_debug_arg(p)
    args = p.parse_args([])
    assert (args.outputs_file, args.stack, args.region, args.endpoint_url, args.consumer) == (None,) * 5
    assert (args.apply, args.dry_run, args.limit, args.debug) == (False, False, None, False)
    assert any("(default cdk-outputs.json" in (a.help or "") for a in p._actions)


def test_apply_and_dry_run_exclude_each_other(capsys):
    p = cli.parser("t", "d")
    cli.add_apply_args(p, act="do it")
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--apply", "--dry-run"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_flags_are_never_abbreviated(capsys):
    p = cli.parser("t", "d")
    p.add_argument("--max-failed-attempts-per-hour", type=int)
    with pytest.raises(SystemExit):
        p.parse_args(["--max", "3"])
    assert "unrecognized arguments: --max" in capsys.readouterr().err


def test_a_retired_flag_is_a_clear_error(capsys):
    p = cli.parser("t", "d")
    p.add_argument("--to-queue-url")
    cli.retire(p, "--to", "the target queue is --to-queue-url URL")
    with pytest.raises(SystemExit) as e:
        p.parse_args(["--to", "https://q"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "t: error: --to is retired: the target queue is --to-queue-url URL" in err
    assert "--to " not in p.format_help().replace("--to-queue-url", "")


def test_outputs_are_read_from_the_default_file_when_needed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(outputs_file=None, stack=None)
    assert cli.stack_outputs(args, needed_for=None) is None
    with pytest.raises(OutputsError, match=r"^--consumer x's DLQ comes from the stack outputs, but cdk-outputs.json "
                                           r"\(the default --outputs-file\) does not exist"):
        cli.stack_outputs(args, needed_for="--consumer x's DLQ")
    with pytest.raises(OutputsError, match="outputs file 'cdk-outputs.json' not found"):
        cli.stack_outputs(args)
    (tmp_path / "cdk-outputs.json").write_text(json.dumps({"S": {"TopicArn": "t"}}))
    assert cli.stack_outputs(args).get("TopicArn") == "t"
    assert cli.stack_outputs(args, needed_for="x").stack_name == "S"
    assert cli.stack_outputs(args, needed_for=None) is None  # not needed and not named: not read


def test_passthrough_repeats_the_stack_and_aws_flags_given():
    args = argparse.Namespace(outputs_file="o.json", stack=None, region="eu-west-1",
                              endpoint_url="http://127.0.0.1:5000", other="x")
    assert cli.passthrough(args) == ["--outputs-file", "o.json", "--region", "eu-west-1",
                                     "--endpoint-url", "http://127.0.0.1:5000"]


# ---- one contract: --profile, the stack's region, --json ----

AWS_TOOLS = {"submit-job": ("ops.emr.cli", "submit_parser", []), "job-runs": ("ops.emr.cli", "runs_parser", ["list"]),
             "onboard-account": ("ops.onboarding.cli", "parser", []),
             "redrive-dlq": ("ops.redrive.cli", "parser", ["inspect"]),
             "source-state": ("ops.state.cli", "parser", ["summary"]),
             "compact-table": ("ops.compaction.cli", "parser", [])}


@pytest.mark.parametrize("tool", sorted(AWS_TOOLS))
def test_every_tool_that_calls_aws_takes_profile_and_sets_it_for_every_client(tool, monkeypatch):
    import importlib

    module, make, sub = AWS_TOOLS[tool]
    p = getattr(importlib.import_module(module), make)()
    monkeypatch.setenv("AWS_PROFILE", "before")  # restored after the test: parse_args sets it for the process
    required = {"submit-job": ["--consumer", "c", "--format", "csv"], "compact-table": ["--format", "delta"],
                "onboard-account": ["--consumer-account", "111122223333"]}
    args = cli.parse_args(p, [*sub, *required.get(tool, []), "--profile", "ops-admin"])
    assert args.profile == "ops-admin" and __import__("os").environ["AWS_PROFILE"] == "ops-admin"


def test_a_missing_profile_is_one_line(tmp_path, capsys, monkeypatch):
    from ops.redrive.cli import main

    monkeypatch.setenv("AWS_PROFILE", "before")
    rc = main(["inspect", "--dlq-url", "https://sqs.us-east-1.amazonaws.com/123456789012/d", "--profile", "nobody"])
    err = capsys.readouterr().err
    assert rc == 2 and err == "redrive-dlq: AWS error: The config profile (nobody) could not be found\n"


def _outputs(region):
    from ops.stack_outputs import StackOutputs
    return StackOutputs("S", {"Region": region} if region else {})


def test_the_region_is_the_stack_s(monkeypatch, capsys):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert cli.stack_region(None, _outputs("eu-west-1"), "cdk-outputs.json") == "eu-west-1"
    assert "note: using region eu-west-1 from cdk-outputs.json (the environment says us-east-1)" in capsys.readouterr().err
    assert cli.stack_region("eu-west-1", _outputs("eu-west-1"), "o.json") == "eu-west-1"
    assert cli.stack_region("ap-south-1", _outputs(None), "o.json") == "ap-south-1"  # outputs without one
    with pytest.raises(OutputsError, match=r"--region us-east-2, but stack S in o.json is in eu-west-1"):
        cli.stack_region("us-east-2", _outputs("eu-west-1"), "o.json")
