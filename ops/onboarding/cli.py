"""The onboard-account command line: a dry run by default, which prints the diff of every policy it
would change; --apply writes them."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ops import aws, cli
from ops.onboarding import OnboardError
from ops.onboarding import aws as onboarding_aws
from ops.onboarding import policy as pm
from ops.onboarding.request import FROM_OUTPUTS, Request, build_request, consumer_artifacts, needs_outputs

PROG = "onboard-account"


def parser() -> argparse.ArgumentParser:
    p = cli.parser(PROG, "Grant a consumer in another AWS account read access to the source data "
                         "(dry run unless --apply).")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--consumer-account", metavar="ID",
                     help="12-digit account id of the consumer (its root principal, narrowed by the next two flags)")
    who.add_argument("--consumer-role-arn", metavar="ARN", help="the consumer's job role, instead of the whole account")
    p.add_argument("--principal-arn-like", action="append", metavar="PATTERN",
                   help="with --consumer-account: only callers whose ARN matches (aws:PrincipalArn, repeatable)")
    p.add_argument("--principal-org-id", metavar="ID",
                   help="with --consumer-account: only callers in this AWS Organization (aws:PrincipalOrgID)")
    p.add_argument("--bucket", action="append", metavar="NAME", help="source bucket (repeatable)")
    p.add_argument("--prefix", action="append", metavar="PREFIX",
                   help="key prefix the consumer may read (repeatable; '' means the whole bucket)")
    via = p.add_mutually_exclusive_group()
    via.add_argument("--queue-url", metavar="URL", help="owner's queue the consumer reads")
    via.add_argument("--topic-arn", metavar="ARN", nargs="?", const=FROM_OUTPUTS,
                     help="owner's topic to subscribe the consumer's own queue to (no value: the stack's TopicArn)")
    p.add_argument("--subscriber-queue-arn", metavar="ARN",
                   help="with --topic-arn: the consumer's own queue; the owner subscribes it, filtered to --prefix")
    p.add_argument("--kms-key-arn", metavar="ARN", help="customer-managed key encrypting the data")
    cli.add_stack_args(p, used_for="when the bucket, a bare --topic-arn or --consumer's queue or prefix comes "
                                   "from it")
    cli.add_consumer_arg(
        p, help="consumer name: picks its queue and prefix from the outputs file, and names the cdk.json entry")
    p.add_argument("--cdk-json", metavar="FILE", type=Path, default=Path("cdk.json"),
                   help="the stack's cdk.json, which the printed consumer entry must fit (default cdk.json; "
                        "skipped when absent)")
    cli.add_apply_args(p, act="write the policies")
    switches = {
        "--revoke": "remove what onboarding added for this consumer (without --prefix: every prefix)",
        "--share-queue": "queue mode: grant the queue even though another account already consumes it (the two "
                         "then compete for its messages); without it, such a grant is refused",
        "--force": "write where onboarding refuses: its own statements changed by hand (they are replaced), "
                   "or a policy a CloudFormation stack's template holds",
    }
    for flag, what in switches.items():
        p.add_argument(flag, action="store_true", help=what)
    cli.add_aws_args(p)
    cli.add_debug_arg(p)
    return p


def _onboard(req: Request, clients: dict, out=print, err=cli.say) -> int:
    """Show (and with --apply, write) every policy change, then what the consumer must do on its side."""
    for note in req.notes:
        err(f"note: {note}")
    action = "revoke" if req.revoke else "grant"
    who = req.grantee.role_arn or f"account {req.grantee.account}"
    out(f"# {action} {who} ({'apply' if req.apply else 'dry run'})")
    # Every policy is read and checked before any is written, so a bad one stops the run with nothing changed.
    prepared = [onboarding_aws.prepare(t) for t in onboarding_aws.build_targets(req, clients)]
    readers = _other_queue_readers(req, prepared)
    if readers and req.share_queue:
        err(f"note: {pm.shared_queue_note(req.queue_url, req.grantee, readers)}")
    elif readers:  # --force does not share a queue: that takes its own, explicit flag
        problem = pm.shared_queue_problem(req.queue_url, req.grantee, readers)
        if req.apply:
            raise OnboardError(f"refusing to write, nothing changed: {problem}")
        err(f"warning: --apply would refuse: {problem}")
    refusals = [r for p in prepared for r in pm.refusals(p.plan, p.label, revoke=req.revoke, policy_owner=p.policy_owner)]
    if refusals and req.apply and not req.force:
        for p in prepared:
            if p.plan.changed:
                out(pm.policy_diff(p.plan.before, p.plan.after, p.label).rstrip("\n"))
        if any(pm.stack_owned(p.plan, revoke=req.revoke, policy_owner=p.policy_owner) for p in prepared):
            _print_cdk_entry(consumer_artifacts(req), out, err)  # the refusal says to add it and deploy
        raise OnboardError("refusing to write, nothing changed:\n  " + "\n  ".join(refusals))
    for r in refusals:
        err(f"{'note (--force)' if req.force else 'warning'}: {r}")
    outcomes: list[onboarding_aws.Outcome] = []
    for p in prepared:
        if req.apply:
            try:
                o = onboarding_aws.commit(p, err, force=req.force)
            except Exception:
                written = [x.label for x in outcomes if x.written]
                err(f"stopped at {p.label}; already written: {', '.join(written) or 'nothing'}. "
                    "Each policy is whole: re-running is safe, and --revoke removes what was added.")
                raise
        else:
            o = onboarding_aws.Outcome(p.label, p.plan.changed, False, pm.policy_diff(p.plan.before, p.plan.after, p.label))
        outcomes.append(o)
        out(o.diff.rstrip("\n") if o.changed else f"= {o.label}: unchanged")
    changed = [o for o in outcomes if o.changed]
    if not req.apply:
        if changed:
            out(f"# dry run: {len(changed)} of {len(outcomes)} policies would change; re-run with --apply to write them")
        else:
            out(f"# dry run: all {len(outcomes)} policies already as wanted; nothing to do")
    else:
        out(f"# applied: {sum(o.written for o in outcomes)} policies written, "
            f"{len(outcomes) - len(changed)} already as wanted")
    if not req.revoke:
        art = consumer_artifacts(req)
        out(f"\n# IAM policy for the consumer to attach to its job role in account {req.grantee.account}:")
        out(json.dumps(art["role_policy"], indent=2))
        if "subscriber_queue_policy" in art:
            out(f"\n# queue policy for the consumer's own queue {req.subscriber_queue_arn}, so the topic can deliver "
                "to it. SNS then sends that queue a SubscriptionConfirmation message: the consumer confirms with "
                f"`aws sns confirm-subscription --topic-arn {req.topic_arn} --token TOKEN "
                "--authenticate-on-unsubscribe true` (TOKEN from the message), before starting its job:")
            out(json.dumps(art["subscriber_queue_policy"], indent=2))
        _print_cdk_entry(art, out, err)
    return 0


def _print_cdk_entry(art: dict, out, err) -> None:
    """The consumer's cdk.json entry (consumer_artifacts'), with the notes on how it fits cdk.json."""
    for note in art["cdk_notes"]:
        err(f"note: {note}")
    if art["cdk_context"]:
        out("\n# cdk.json context: add this consumer to \"consumers\" (and the role, if any, to "
            "\"crossAccountPrincipals\") so the next `cdk deploy` keeps the grant:")
        out(json.dumps(art["cdk_context"], indent=2))


def _other_queue_readers(req: Request, prepared: list[onboarding_aws.Prepared]) -> dict[str, str]:
    """Queue mode: the accounts other than the grantee's that already consume the queue this grant adds it to
    (none when the queue policy has the grant already, as a previous run left it)."""
    if req.revoke:
        return {}
    for p in prepared:
        if isinstance(p.target.store, onboarding_aws.QueuePolicyStore) and p.plan.changed:
            return pm.other_queue_readers(p.plan.before, req.grantee, req.declared_queue_readers)
    return {}


def cdk_json_context(path: Path) -> dict | None:
    """cdk.json's context, or None when there is no such file."""
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text()).get("context") or {})
    except (json.JSONDecodeError, AttributeError) as e:
        raise OnboardError(f"--cdk-json {path} is not a cdk.json file: {e}") from None


def _command(args) -> int:
    outputs = cli.stack_outputs(args, needed_for=needs_outputs(args))
    req = build_request(args, aws.configured_region(args.region), outputs, cdk_json_context(args.cdk_json))
    return _onboard(req, onboarding_aws.clients(req.region, req.endpoint_url))


def main(argv: list[str] | None = None) -> int:
    args = cli.parse_args(parser(), argv)
    return cli.run(PROG, lambda: _command(args), debug=args.debug,
                   interrupted="each policy is either fully written or untouched")
