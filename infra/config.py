"""The stack's settings, parsed once from cdk.json context into frozen dataclasses.

Every error names the context key (for example `consumers[1].maxReceiveCount`) and says what is
allowed, so a bad value fails `cdk synth` before any construct is built. Values given on the command
line with `-c key=value` arrive as strings; JSON objects and lists are accepted in that form too.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from infra.contract import (
    ACCOUNT_ID_RE, CONSUMER_NAME_RE, account_grant_conditions, CONSUMER_NAME_RULE, DEFAULT_MAX_RECEIVE_COUNT, ORG_ID_RE, PRINCIPAL_PATTERN_RE,
)

# Top-level context keys this module owns. Any other key must be CDK's own (below), so that a typo such as
# `alarm` for `alarms` fails synth instead of silently leaving the defaults in place.
CONTEXT_KEYS = (
    "sourceBucket",
    "eventFilter",
    "consumers",
    "crossAccountPrincipals",
    "kms",
    "emr",
    "alarms",
)
# CDK's own context: feature flags (@aws-cdk/..., @aws-cdk-containers/...), what the CLI passes (aws:cdk:*, such
# as aws:cdk:version-reporting), and older aws-cdk:* switches.
CDK_CONTEXT_PREFIXES = ("@aws-cdk", "aws:cdk:", "aws-cdk:")
# Keys the CLI writes into cdk.json or cdk.context.json: `cli-telemetry`, `cdk acknowledge`, `cdk migrate`.
CDK_CONTEXT_KEYS = ("cli-telemetry", "acknowledged-issue-numbers", "cdk-migrate")
# Cached context lookups in cdk.context.json: "<provider>:<name>=<value>:...", e.g. availability-zones:account=...
_LOOKUP_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*:[^=]*=")

DEFAULT_RELEASE_LABEL = "emr-spark-8.0.0"
ARCHITECTURES = ("X86_64", "ARM64")

# Real S3 URL-encodes event keys (a space becomes "+"), so a prefix outside these characters would be
# compared in encoded form by SNS and never match.
_KEY_PART_RE = re.compile(r"^[A-Za-z0-9/_.\-]*$")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
_PRINCIPAL_RE = re.compile(r"^arn:aws[a-z\-]*:iam::(\d{12}):(root|role/[\w+=,.@/\-]+|user/[\w+=,.@/\-]+)$")
_RELEASE_RE = re.compile(r"^emr-(?:spark-)?(\d+)\.(\d+)\.(\d+)$")
# Glue stores database names in lower case; Athena also reads only these characters.
_GLUE_DATABASE_RE = re.compile(r"^[a-z0-9_]{1,255}$")
_KEY_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:kms:[a-z0-9\-]+:\d{12}:key/[0-9a-f\-]{36}$")
# What SNS takes as an e-mail endpoint, roughly: a local part, @, and a domain with a dot in it.
_EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$")
MAX_ALARM_EMAILS = 20


class ConfigError(ValueError):
    """A context value is missing or not allowed; the message names the key."""


@dataclass(frozen=True)
class SourceBucketConfig:
    """`mode` "new" creates the bucket; "import" uses an existing bucket in the stack's account."""

    mode: str
    bucket_name: str | None = None

    @property
    def imported(self) -> bool:
        return self.mode == "import"


@dataclass(frozen=True)
class EventFilterConfig:
    prefix: str = ""
    suffix: str = ""


@dataclass(frozen=True)
class AccountAccessConfig:
    """An explicit grant to a consumer's whole account, narrowed by conditions on the calling principal."""

    principal_arn_like: tuple[str, ...] = ()
    principal_org_id: str | None = None

    def conditions(self) -> dict:
        return account_grant_conditions(self.principal_arn_like, self.principal_org_id)


@dataclass(frozen=True)
class ConsumerConfig:
    name: str
    account_id: str
    prefix: str = ""
    max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT
    visibility_timeout_seconds: int = 300
    account_access: AccountAccessConfig | None = None
    # The Glue database this consumer's job keeps Iceberg tables in; None when it writes no Iceberg table.
    iceberg_glue_database: str | None = None

    @property
    def construct_id(self) -> str:
        """CamelCase form of the name, for logical ids and output names ("raw-events" -> "RawEvents")."""
        return "".join(part[:1].upper() + part[1:] for part in self.name.split("-"))


@dataclass(frozen=True)
class KmsConfig:
    """`mode` "managed": SQS-managed SSE on queues, S3-managed on buckets. "customer": one CMK for all."""

    mode: str = "managed"

    @property
    def customer_managed(self) -> bool:
        return self.mode == "customer"


@dataclass(frozen=True)
class EmrConfig:
    release_label: str = DEFAULT_RELEASE_LABEL
    architecture: str = "X86_64"
    max_vcpu: int = 16
    max_memory_gb: int = 64
    max_disk_gb: int = 200
    idle_timeout_minutes: int = 15
    log_retention_days: int = 30


@dataclass(frozen=True)
class AlarmConfig:
    dlq_messages_threshold: int = 1
    oldest_message_age_seconds: int = 900
    quarantined_files_threshold: int = 1
    period_seconds: int = 300
    evaluation_periods: int = 1
    emails: tuple[str, ...] = ()  # subscribed to the alarm topic; each confirms by e-mail


@dataclass(frozen=True)
class ConsumerGrant:
    """Who acts for a consumer in resource policies: IAM principals, and conditions every statement carries."""

    principals: tuple[str, ...]
    conditions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StackConfig:
    source_bucket: SourceBucketConfig
    event_filter: EventFilterConfig
    consumers: tuple[ConsumerConfig, ...]
    cross_account_principals: tuple[str, ...] = ()
    kms: KmsConfig = field(default_factory=KmsConfig)
    emr: EmrConfig = field(default_factory=EmrConfig)
    alarms: AlarmConfig = field(default_factory=AlarmConfig)

    def principals_for(self, consumer: ConsumerConfig) -> tuple[str, ...]:
        """The roles listed for the consumer's account; with `accountAccess`, the account root instead."""
        if consumer.account_access is not None:
            return (f"arn:aws:iam::{consumer.account_id}:root",)
        return tuple(p for p in self.cross_account_principals if principal_account(p) == consumer.account_id)

    def grant_for(self, consumer: ConsumerConfig) -> ConsumerGrant:
        """What the consumer's queue, key and source-read statements grant, to whom and under which conditions.
        parse_config guarantees an account root only ever comes with its `accountAccess` conditions."""
        conditions = consumer.account_access.conditions() if consumer.account_access else {}
        return ConsumerGrant(self.principals_for(consumer), conditions)

    def read_prefix(self, consumer: ConsumerConfig) -> str:
        """The key prefix a consumer may read: its own, else everything the notifications cover.

        A consumer without a prefix is sent every notified event, so it must be able to read every
        notified object; that is the whole bucket only when eventFilter has no prefix either."""
        return consumer.prefix or self.event_filter.prefix

    def read_pattern(self, consumer: ConsumerConfig) -> str:
        """Object-key pattern of what a consumer may read: its prefix, and the suffix S3 notifies for."""
        return f"{self.read_prefix(consumer)}*{self.event_filter.suffix}"


def principal_account(principal_arn: str) -> str:
    m = _PRINCIPAL_RE.match(principal_arn)
    if not m:
        raise ValueError(principal_arn)
    return m.group(1)


# --- parsing helpers -------------------------------------------------------------------------------

def _decode(value: Any, key: str, kind: type) -> Any:
    """Accept JSON text for object/list values, as `cdk synth -c key='{...}'` passes strings."""
    if isinstance(value, str) and kind in (dict, list):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{key}: expected a JSON {_kind_name(kind)}, got unparsable text ({e.msg})") from None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{key}: expected {_kind_name(kind)}, got {type(value).__name__} {value!r}")
    return value


def _kind_name(kind: type) -> str:
    return {dict: "object", list: "list", str: "string", int: "integer", bool: "boolean"}[kind]


def _object(raw: Any, key: str, allowed: tuple[str, ...]) -> dict:
    obj = _decode(raw, key, dict)
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise ConfigError(f"{key}: unknown key(s) {', '.join(unknown)}; allowed keys: {', '.join(allowed)}")
    return obj


def _int(obj: dict, name: str, key: str, default: int, lo: int, hi: int) -> int:
    full = f"{key}.{name}"
    if name not in obj:
        return default
    value = obj[name]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    value = _decode(value, full, int)
    if not lo <= value <= hi:
        raise ConfigError(f"{full}: {value} is out of range; allowed: an integer from {lo} to {hi}")
    return value


def _str(obj: dict, name: str, key: str, default: str | None = None) -> str | None:
    if name not in obj or obj[name] is None:
        return default
    return _decode(obj[name], f"{key}.{name}", str)


def _choice(obj: dict, name: str, key: str, default: str, choices: tuple[str, ...]) -> str:
    value = _str(obj, name, key, default)
    if value not in choices:
        raise ConfigError(f"{key}.{name}: {value!r} is not allowed; allowed: {', '.join(map(repr, choices))}")
    return value


def _key_part(obj: dict, name: str, key: str) -> str:
    value = _str(obj, name, key, "") or ""
    if len(value) > 512 or not _KEY_PART_RE.match(value):
        raise ConfigError(
            f"{key}.{name}: {value!r} is not allowed; allowed: up to 512 characters from A-Z a-z 0-9 / _ . - "
            "(S3 URL-encodes other characters in event keys, so filters on them would not match)"
        )
    return value


# --- sections --------------------------------------------------------------------------------------
# A key left out takes the default of its dataclass field, so each default is written once.

def _source_bucket(raw: Any) -> SourceBucketConfig:
    key = "sourceBucket"
    if raw is None:
        raise ConfigError(f'{key}: missing; allowed: {{"mode": "new"}} or {{"mode": "import", "bucketName": "..."}}')
    obj = _object(raw, key, ("mode", "bucketName"))
    mode = _choice(obj, "mode", key, "new", ("new", "import"))
    name = _str(obj, "bucketName", key)
    if mode == "import" and not name:
        raise ConfigError(f'{key}.bucketName: required when {key}.mode is "import"; allowed: an existing bucket name')
    if mode == "new" and name is not None:
        raise ConfigError(
            f'{key}.bucketName: only allowed when {key}.mode is "import"; a new bucket gets a generated name'
        )
    if name is not None and (not _BUCKET_RE.match(name) or ".." in name):
        raise ConfigError(f"{key}.bucketName: {name!r} is not a valid S3 bucket name; allowed: 3-63 of a-z 0-9 . -")
    return SourceBucketConfig(mode=mode, bucket_name=name)


def _event_filter(raw: Any) -> EventFilterConfig:
    key = "eventFilter"
    obj = _object(raw if raw is not None else {}, key, ("prefix", "suffix"))
    return EventFilterConfig(prefix=_key_part(obj, "prefix", key), suffix=_key_part(obj, "suffix", key))


def _account_access(raw: Any, key: str, account: str) -> AccountAccessConfig | None:
    """`accountAccess`: the explicit opt-in to granting the whole account, with at least one condition."""
    if raw is None:
        return None
    obj = _object(raw, key, ("principalArnLike", "principalOrgId"))
    patterns = tuple(_decode(p, f"{key}.principalArnLike[{i}]", str)
                     for i, p in enumerate(_decode(obj.get("principalArnLike", []), f"{key}.principalArnLike", list)))
    for i, pattern in enumerate(patterns):
        m = PRINCIPAL_PATTERN_RE.match(pattern)
        if not m or m.group("account") != account:
            raise ConfigError(
                f"{key}.principalArnLike[{i}]: {pattern!r} is not allowed; allowed: an IAM role or user ARN pattern "
                f"in account {account}, such as 'arn:aws:iam::{account}:role/ingest-*'"
            )
    org = _str(obj, "principalOrgId", key)
    if org is not None and not ORG_ID_RE.match(org):
        raise ConfigError(f"{key}.principalOrgId: {org!r} is not allowed; allowed: an AWS Organizations id like 'o-a1b2c3d4e5'")
    if not patterns and org is None:
        raise ConfigError(
            f"{key}: grants account {account} with no condition; allowed: principalArnLike (a list of role ARN "
            "patterns) and/or principalOrgId, which every statement of the grant then requires"
        )
    return AccountAccessConfig(principal_arn_like=patterns, principal_org_id=org)


def _consumer(raw: Any, key: str, event_filter: EventFilterConfig) -> ConsumerConfig:
    obj = _object(raw, key, ("name", "accountId", "prefix", "maxReceiveCount", "visibilityTimeoutSeconds",
                             "accountAccess", "icebergGlueDatabase"))
    name = _str(obj, "name", key)
    if name is None or not CONSUMER_NAME_RE.match(name):
        raise ConfigError(f"{key}.name: {name!r} is not allowed; allowed: {CONSUMER_NAME_RULE}")
    account = _str(obj, "accountId", key)
    if account is None or not ACCOUNT_ID_RE.match(account):
        raise ConfigError(f"{key}.accountId: {account!r} is not allowed; allowed: a 12-digit AWS account id string")
    prefix = _key_part(obj, "prefix", key)
    if prefix and not prefix.startswith(event_filter.prefix):
        raise ConfigError(
            f"{key}.prefix: {prefix!r} lies outside eventFilter.prefix {event_filter.prefix!r}, so it would never "
            f"receive an event; allowed: a prefix starting with {event_filter.prefix!r}, or \"\""
        )
    database = _str(obj, "icebergGlueDatabase", key)
    if database is not None and not _GLUE_DATABASE_RE.match(database):
        raise ConfigError(
            f"{key}.icebergGlueDatabase: {database!r} is not allowed; allowed: 1-255 lower-case letters, digits "
            "and '_' (the names Glue keeps and Athena reads), or leave the key out when the job writes no "
            "Iceberg table"
        )
    return ConsumerConfig(
        name=name,
        account_id=account,
        prefix=prefix,
        max_receive_count=_int(obj, "maxReceiveCount", key, ConsumerConfig.max_receive_count, 1, 1000),
        visibility_timeout_seconds=_int(
            obj, "visibilityTimeoutSeconds", key, ConsumerConfig.visibility_timeout_seconds, 0, 43200
        ),
        account_access=_account_access(obj.get("accountAccess"), f"{key}.accountAccess", account),
        iceberg_glue_database=database,
    )


def _consumers(raw: Any, event_filter: EventFilterConfig) -> tuple[ConsumerConfig, ...]:
    key = "consumers"
    if raw is None:
        raise ConfigError(f"{key}: missing; allowed: a non-empty list of consumer objects")
    items = _decode(raw, key, list)
    if not items:
        raise ConfigError(f"{key}: empty; allowed: a non-empty list of consumer objects")
    if len(items) > 40:
        raise ConfigError(f"{key}: {len(items)} consumers; allowed: at most 40 (CloudFormation output limits)")
    consumers = tuple(_consumer(item, f"{key}[{i}]", event_filter) for i, item in enumerate(items))
    seen: dict[str, int] = {}
    for i, c in enumerate(consumers):
        if c.construct_id in seen:
            raise ConfigError(
                f"{key}[{i}].name: {c.name!r} clashes with {key}[{seen[c.construct_id]}].name; allowed: unique names"
            )
        seen[c.construct_id] = i
    return consumers


def _principals(raw: Any, consumers: tuple[ConsumerConfig, ...]) -> tuple[str, ...]:
    key = "crossAccountPrincipals"
    items = _decode(raw if raw is not None else [], key, list)
    accounts = sorted({c.account_id for c in consumers})
    out: list[str] = []
    for i, item in enumerate(items):
        k = f"{key}[{i}]"
        value = _decode(item, k, str)
        # A bare account id or its root would hand the consumer's grants to every principal of that account.
        whole = re.match(r"^(?:(\d{12})|arn:aws[a-z\-]*:iam::(\d{12}):root)$", value)
        if whole:
            acct = whole.group(1) or whole.group(2)
            raise ConfigError(
                f"{k}: {value!r} grants the whole account {acct}; allowed: IAM role ARNs "
                f"(arn:aws:iam::{acct}:role/<name>). To grant the account on purpose, give its consumer an "
                '"accountAccess" with principalArnLike and/or principalOrgId instead'
            )
        m = _PRINCIPAL_RE.match(value)
        if not m or not m.group(2).startswith("role/"):
            raise ConfigError(
                f"{k}: {value!r} is not allowed; allowed: an IAM role ARN arn:aws:iam::<account>:role/<name> "
                "(roles, not users: a user carries long-term keys)"
            )
        if m.group(1) not in accounts:
            raise ConfigError(
                f"{k}: account {m.group(1)} is not the accountId of any consumer; allowed: principals in "
                f"{', '.join(accounts)}"
            )
        if value in out:
            raise ConfigError(f"{k}: {value!r} is listed twice; allowed: each principal once")
        out.append(value)
    return tuple(out)


def _kms(raw: Any) -> KmsConfig:
    key = "kms"
    obj = _object(raw if raw is not None else {}, key, ("mode",))
    return KmsConfig(mode=_choice(obj, "mode", key, KmsConfig.mode, ("managed", "customer")))


def _emr(raw: Any) -> EmrConfig:
    key = "emr"
    obj = _object(
        raw if raw is not None else {},
        key,
        ("releaseLabel", "architecture", "maximumCapacity", "idleTimeoutMinutes", "logRetentionDays"),
    )
    label = _str(obj, "releaseLabel", key, DEFAULT_RELEASE_LABEL)
    m = _RELEASE_RE.match(label)
    # Spark 4 is the first with Python streaming sources; every emr-7.x and older ships Spark 3.
    if not m or not label.startswith("emr-spark-"):
        raise ConfigError(
            f"{key}.releaseLabel: {label!r} is not allowed; allowed: an EMR release with Spark 4, "
            f"emr-spark-<major>.<minor>.<patch> such as {DEFAULT_RELEASE_LABEL!r} (emr-7.x ships Spark 3.5)"
        )
    cap_key = f"{key}.maximumCapacity"
    cap = _object(obj.get("maximumCapacity") or {}, cap_key, ("vcpu", "memoryGb", "diskGb"))
    vcpu = _int(cap, "vcpu", cap_key, EmrConfig.max_vcpu, 1, 4000)
    memory = _int(cap, "memoryGb", cap_key, EmrConfig.max_memory_gb, 2, 24000)
    if not vcpu <= memory <= vcpu * 8:
        raise ConfigError(
            f"{cap_key}.memoryGb: {memory} GB for {vcpu} vCPU is not allowed; allowed: 1 to 8 GB per vCPU "
            f"({vcpu} to {vcpu * 8})"
        )
    retention = _int(obj, "logRetentionDays", key, EmrConfig.log_retention_days, 1, 3653)
    if retention not in _LOG_RETENTION_DAYS:
        raise ConfigError(
            f"{key}.logRetentionDays: {retention} is not allowed; allowed: {', '.join(map(str, _LOG_RETENTION_DAYS))}"
        )
    return EmrConfig(
        release_label=label,
        architecture=_choice(obj, "architecture", key, EmrConfig.architecture, ARCHITECTURES),
        max_vcpu=vcpu,
        max_memory_gb=memory,
        max_disk_gb=_int(cap, "diskGb", cap_key, EmrConfig.max_disk_gb, 20, 200000),
        idle_timeout_minutes=_int(obj, "idleTimeoutMinutes", key, EmrConfig.idle_timeout_minutes, 1, 10080),
        log_retention_days=retention,
    )


_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                       2922, 3288, 3653)


def _alarms(raw: Any) -> AlarmConfig:
    key = "alarms"
    obj = _object(
        raw if raw is not None else {},
        key,
        ("dlqMessagesThreshold", "oldestMessageAgeSeconds", "quarantinedFilesThreshold", "periodSeconds",
         "evaluationPeriods", "emails"),
    )
    period = _int(obj, "periodSeconds", key, AlarmConfig.period_seconds, 60, 86400)
    if period % 60:
        raise ConfigError(f"{key}.periodSeconds: {period} is not allowed; allowed: a multiple of 60")
    return AlarmConfig(
        dlq_messages_threshold=_int(
            obj, "dlqMessagesThreshold", key, AlarmConfig.dlq_messages_threshold, 1, 1_000_000
        ),
        oldest_message_age_seconds=_int(
            obj, "oldestMessageAgeSeconds", key, AlarmConfig.oldest_message_age_seconds, 60, 1_209_600
        ),
        quarantined_files_threshold=_int(
            obj, "quarantinedFilesThreshold", key, AlarmConfig.quarantined_files_threshold, 1, 1_000_000
        ),
        period_seconds=period,
        evaluation_periods=_int(obj, "evaluationPeriods", key, AlarmConfig.evaluation_periods, 1, 100),
        emails=_emails(obj.get("emails"), f"{key}.emails"),
    )


def _emails(raw: Any, key: str) -> tuple[str, ...]:
    """Addresses the alarm topic mails; SNS asks each to confirm before it sends anything."""
    items = _decode(raw if raw is not None else [], key, list)
    if len(items) > MAX_ALARM_EMAILS:
        raise ConfigError(f"{key}: {len(items)} addresses; allowed: at most {MAX_ALARM_EMAILS} (use a mailing "
                          "list, or subscribe other endpoints to the AlarmTopicArn output)")
    out: list[str] = []
    for i, item in enumerate(items):
        value = _decode(item, f"{key}[{i}]", str).strip()
        if len(value) > 254 or not _EMAIL_RE.match(value):
            raise ConfigError(f"{key}[{i}]: {value!r} is not an e-mail address; allowed: an address such as "
                              "ops@example.com")
        if value.lower() in (o.lower() for o in out):
            raise ConfigError(f"{key}[{i}]: {value!r} is listed twice; allowed: each address once")
        out.append(value)
    return tuple(out)


def _check_grants(consumers: tuple[ConsumerConfig, ...], principals: tuple[str, ...]) -> None:
    """Every consumer is granted to roles, or to its account with explicit conditions; never both, never neither."""
    for i, c in enumerate(consumers):
        roles = [p for p in principals if principal_account(p) == c.account_id]
        if c.account_access is not None and roles:
            raise ConfigError(
                f"consumers[{i}].accountAccess: account {c.account_id} also has roles in crossAccountPrincipals "
                f"({', '.join(roles)}); allowed: one of the two. Drop accountAccess to grant just those roles"
            )
        if c.account_access is None and not roles:
            raise ConfigError(
                f"consumers[{i}]: no principal for account {c.account_id}, and granting the whole account needs "
                f"saying so; allowed: add its roles to crossAccountPrincipals "
                f'(arn:aws:iam::{c.account_id}:role/<name>), or set consumers[{i}].accountAccess to '
                f'{{"principalArnLike": ["arn:aws:iam::{c.account_id}:role/<name-pattern>"]}} '
                'and/or {"principalOrgId": "o-..."}'
            )


def is_cdk_context_key(key: str) -> bool:
    return key.startswith(CDK_CONTEXT_PREFIXES) or key in CDK_CONTEXT_KEYS or bool(_LOOKUP_KEY_RE.match(key))


def check_context_keys(keys) -> None:
    """Every top-level context key is one of this app's or one of CDK's own."""
    unknown = sorted(k for k in keys if k not in CONTEXT_KEYS and not is_cdk_context_key(k))
    if not unknown:
        return
    first, others = unknown[0], unknown[1:]
    by_lower = {c.lower(): c for c in CONTEXT_KEYS}
    close = difflib.get_close_matches(first.lower(), list(by_lower), n=1, cutoff=0.6)
    hint = f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
    also = f"; also unknown: {', '.join(others)}" if others else ""
    raise ConfigError(
        f"{first}: unknown top-level context key{hint}; allowed: {', '.join(CONTEXT_KEYS)}, and CDK's own keys "
        f"(feature flags @aws-cdk..., aws:cdk:..., cli-telemetry){also}"
    )


def parse_config(context: Mapping[str, Any]) -> StackConfig:
    """Build the validated settings from a context mapping (cdk.json's "context", plus -c overrides)."""
    check_context_keys(context)
    event_filter = _event_filter(context.get("eventFilter"))
    consumers = _consumers(context.get("consumers"), event_filter)
    principals = _principals(context.get("crossAccountPrincipals"), consumers)
    _check_grants(consumers, principals)
    return StackConfig(
        source_bucket=_source_bucket(context.get("sourceBucket")),
        event_filter=event_filter,
        consumers=consumers,
        cross_account_principals=principals,
        kms=_kms(context.get("kms")),
        emr=_emr(context.get("emr")),
        alarms=_alarms(context.get("alarms")),
    )


def config_from_node(node: Any) -> StackConfig:
    """Read the settings from a construct node's context (what `cdk synth` passes in: cdk.json's context,
    cdk.context.json and -c values), refusing keys that are neither this app's nor CDK's."""
    return parse_config(dict(node.get_all_context()))
