"""IAM as AWS would enforce it, offline: what the code calls, mapped to IAM requests and evaluated against the
synthesized template's own policies (moto stores policies but never evaluates them).

- `calls`: the local stand-in's request recording -> the AWS operations the code made, with who made them;
- `actions`: an operation -> the IAM requests AWS authorizes for it (KMS use through S3 and SQS included);
- `world`: one deploy shape's policies (identity, resource, key, trust), resolved to the stand-in's names;
- `evaluator`: those requests evaluated by @cloud-copilot/iam-simulate (devtools/iam/simulate.mjs);
- `recording_server`: moto's server, recording each request whole (tests/iam runs the scenario against it).

tests/iam holds the scenario, the deploy shapes and the tests.
"""
