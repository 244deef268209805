"""The code behind the operator tools (the project's entry points: package-job, submit-job, job-runs, ...).

One package per tool, each in the same layers: pure modules decide (no I/O), `aws.py` makes the AWS calls
(`build.py` writes the archives, for packaging), and a thin `cli.py` parses flags and reports.

- `emr/`: submit-job and job-runs      - `onboarding/`: onboard-account
- `redrive/`: redrive-dlq               - `packaging/`: package-job

Shared by all of them: `cli.py` (common flags, argument types, how a command ends), `aws.py` (session,
clients, AWS error codes), `errors.py` (OperatorError), `stack_outputs.py` (the `cdk deploy --outputs-file`
JSON). The facts the stack promises them (prefixes, actions, name rules) come from infra/contract.py.
"""
