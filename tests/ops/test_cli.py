"""ops/cli.py: how every operator command line ends, and the argument types they share."""
from __future__ import annotations

import argparse

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from ops import cli
from ops.errors import OperatorError


def run(command, capsys, error_exit=2):
    rc = cli.run("some-tool", command, error_exit=error_exit, interrupted="nothing was changed")
    return rc, capsys.readouterr()


def raises(exc):
    def command():
        raise exc
    return command


def test_the_command_s_own_exit_code_is_returned(capsys):
    assert run(lambda: 0, capsys)[0] == 0
    assert run(lambda: 1, capsys)[0] == 1


def test_an_operator_error_is_one_line_on_stderr_with_the_tool_s_error_code(capsys):
    rc, out = run(raises(OperatorError("--bucket 'x' is not a valid S3 bucket name")), capsys, error_exit=2)
    assert rc == 2 and out.out == ""
    assert out.err == "some-tool: error: --bucket 'x' is not a valid S3 bucket name\n"
    assert run(raises(OperatorError("x")), capsys, error_exit=1)[0] == 1


def test_aws_errors_are_one_line_too(capsys):
    denied = ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "GetQueueAttributes")
    rc, out = run(raises(denied), capsys)
    assert rc == 2 and out.err.startswith("some-tool: AWS error: ") and "AccessDenied" in out.err
    assert out.err.count("\n") == 1
    rc, out = run(raises(EndpointConnectionError(endpoint_url="http://127.0.0.1:1")), capsys)
    assert rc == 2 and "Could not connect" in out.err


def test_ctrl_c_exits_130_and_says_what_it_left(capsys):
    rc, out = run(raises(KeyboardInterrupt()), capsys)
    assert rc == 130 and out.err == "some-tool: interrupted; nothing was changed\n"


def test_a_bug_keeps_its_traceback():
    with pytest.raises(ZeroDivisionError):
        cli.run("some-tool", lambda: 1 // 0, error_exit=1, interrupted="")


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


def test_common_flags_and_their_defaults():
    p = argparse.ArgumentParser()
    cli.add_stack_args(p)
    cli.add_aws_args(p)
    cli.add_consumer_arg(p)
    args = p.parse_args([])
    assert (args.outputs_file, args.stack, args.region, args.endpoint_url, args.consumer) == (
        cli.DEFAULT_OUTPUTS_FILE, None, None, None, None)
    q = argparse.ArgumentParser()
    cli.add_stack_args(q, outputs_default=None)
    assert q.parse_args([]).outputs_file is None
