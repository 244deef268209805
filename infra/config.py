"""The stack's settings, parsed once from cdk.json context into frozen pydantic models.

Every error is one line that names the context key (for example `consumers[1].maxReceiveCount`), says what
is allowed and, for an unknown key, suggests the nearest known one, so a bad value fails `cdk synth` before
any construct is built. Values given on the command line with `-c key=value` arrive as strings; JSON objects
and lists are accepted in that form too.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Mapping

from pydantic import (
    AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo,
    field_validator, model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, PydanticUseDefault

from s3sqs.config.clean import CleanSettings, CleanSettingsError, archive_overlap, parse_clean_settings
from s3sqs.config.fields import one_line
from s3sqs.core.names import did_you_mean

from infra.contract import (
    ACCOUNT_ID_RE, CONSUMER_NAME_RE, account_grant_conditions, CONSUMER_NAME_RULE, DEFAULT_MAX_RECEIVE_COUNT, ORG_ID_RE, key_prefix_problem,
    principal_pattern_problem,
)

# Top-level context keys this module owns. Any other key must be CDK's own (below), so that a typo such as
# `alarm` for `alarms` fails synth instead of silently leaving the defaults in place.
CONTEXT_KEYS = ("sourceBucket", "eventFilter", "consumers", "crossAccountPrincipals", "kms", "emr", "alarms",
                "sourceCleaning")
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
_KEY_PART_RE = re.compile(r"^[A-Za-z0-9/_.\-]*\Z")
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]\Z")
_PRINCIPAL_RE = re.compile(r"^arn:aws[a-z\-]*:iam::(\d{12}):(root|role/[\w+=,.@/\-]+|user/[\w+=,.@/\-]+)\Z")
_RELEASE_RE = re.compile(r"^emr-(?:spark-)?(\d+)\.(\d+)\.(\d+)\Z")
# Glue stores database names in lower case; Athena also reads only these characters.
_GLUE_DATABASE_RE = re.compile(r"^[a-z0-9_]{1,255}\Z")
# What SNS takes as an e-mail endpoint, roughly: a local part, @, and a domain with a dot in it.
_EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+\Z")
MAX_ALARM_EMAILS = 20
_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                       2922, 3288, 3653)


class ConfigError(ValueError):
    """A context value is missing or not allowed; the message names the key."""


# --- values ----------------------------------------------------------------------------------------
# Validators raise ValueError("<what is wrong>; allowed: ..."); parse_config puts the key in front (one_line).
# Not s3sqs.config.fields' Int, Choice and Text: cdk.json has always been stricter than Spark's string options
# (a number is not a string, "arm64" is not ARM64, "+5" is not 5) and worded its errors as "expected integer"
# and "allowed: ...", which operators and tests know.

_KIND_NAMES = {dict: "object", list: "list", str: "string", int: "integer"}


def _expect(value: Any, kind: type) -> Any:
    """`value` if it is a `kind`, never converted; an object or list may come as JSON text, as `-c` passes it."""
    if isinstance(value, str) and kind in (dict, list):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"expected a JSON {_KIND_NAMES[kind]}, got unparsable text ({e.msg})") from None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"expected {_KIND_NAMES[kind]}, got {type(value).__name__} {value!r}")
    return value


def _error_at(loc: tuple, message: str) -> ValidationError:
    """An error on a key below the value being checked (a list's item, a consumer's name), for checks that
    need more than that key's own value; pydantic puts the checked value's key in front of `loc`."""
    # The message goes in as context, not as the template: it may hold braces, such as a JSON example.
    error = PydanticCustomError("config", "{message}", {"message": message})
    return ValidationError.from_exception_data("config", [InitErrorDetails(type=error, loc=loc, input=None)])


def _string(value: Any) -> str:
    if value is None:  # null in the context leaves the default, as leaving the key out does
        raise PydanticUseDefault()
    return _expect(value, str)


def _allowed(ok: Callable[[Any], Any], allowed: str) -> AfterValidator:
    """Refuses a value `ok` rejects, as "<value> is not allowed; allowed: <allowed>"."""
    def check(value: Any) -> Any:
        if not ok(value):
            raise ValueError(f"{value!r} is not allowed; allowed: {allowed}")
        return value
    return AfterValidator(check)


def _each(items: list, check: Callable[[Any, list], Any]) -> tuple:
    """Each item checked in order, knowing those before it; an error names the item's index."""
    out: list = []
    for i, item in enumerate(items):
        try:
            out.append(check(item, out))
        except ValueError as e:
            raise _error_at((i,), str(e)) from None
    return tuple(out)


def _Int(lo: int, hi: int):  # noqa: N802 (a type, as pydantic spells them)
    """An integer from `lo` to `hi`, or a string of digits; never a boolean."""
    def parse(value: Any) -> int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            try:
                value = int(value)
            except ValueError:  # "--5", "²": digits to isdigit(), not to int(); refused below
                pass
        value = _expect(value, int)
        if not lo <= value <= hi:
            raise ValueError(f"{value} is out of range; allowed: an integer from {lo} to {hi}")
        return value
    return Annotated[int, BeforeValidator(parse)]


_Str = Annotated[str, BeforeValidator(_string)]
_ListedStr = Annotated[str, BeforeValidator(lambda v: _expect(v, str))]  # in a list, null is not "not given"
_KeyPart = Annotated[_Str, _allowed(lambda v: len(v) <= 512 and _KEY_PART_RE.match(v), (
    "up to 512 characters from A-Z a-z 0-9 / _ . - (S3 URL-encodes other characters in event keys, so filters "
    "on them would not match)"))]


def _Choice(*choices: str):  # noqa: N802
    """One of `choices`, exactly as spelled."""
    return Annotated[_Str, _allowed(choices.__contains__, ", ".join(map(repr, choices)))]


def _Matching(pattern: re.Pattern, allowed: str):  # noqa: N802
    return Annotated[_Str, _allowed(pattern.match, allowed)]


def _Required(pattern: re.Pattern, allowed: str):  # noqa: N802
    """A string `pattern` matches, that must be given: left out or null, it is refused as None."""
    def check(value: Any) -> str:
        if value is None or not pattern.match(_expect(value, str)):
            raise ValueError(f"{value!r} is not allowed; allowed: {allowed}")
        return value
    return Annotated[str, BeforeValidator(check)]


# --- sections --------------------------------------------------------------------------------------
# Fields are listed in the order their keys are documented: "allowed keys" lists them so, and the first
# bad value in that order is the one reported.

class _Section(BaseModel):
    """A context object, given as an object or as JSON text, with only the keys its fields name (aliases)."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, raw: Any) -> dict:
        obj = _expect(raw, dict)
        allowed = [f.alias or name for name, f in cls.model_fields.items()]
        unknown = sorted(set(obj) - set(allowed))
        if unknown:
            named = ", ".join(k + did_you_mean(k, allowed) for k in unknown)
            raise ValueError(f"unknown key(s) {named}; allowed keys: {', '.join(allowed)}")
        # A left-out key whose default must be checked too goes in with that default, so that an error names
        # the key (accountId): on a default itself, pydantic would name the field (account_id).
        checked = {f.alias or name: f.default for name, f in cls.model_fields.items() if f.validate_default}
        return {**checked, **obj}


class SourceBucketConfig(_Section):
    """`mode` "new" creates the bucket; "import" uses an existing bucket in the stack's account."""

    mode: _Choice("new", "import") = "new"
    bucket_name: str | None = Field(None, alias="bucketName", validate_default=True)

    @field_validator("bucket_name", mode="before")
    @classmethod
    def _bucket_name(cls, name: Any, info: ValidationInfo) -> str | None:
        name = None if name is None else _expect(name, str)
        mode = info.data.get("mode")
        if mode == "import" and not name:
            raise ValueError('required when sourceBucket.mode is "import"; allowed: an existing bucket name')
        if mode == "new" and name is not None:
            raise ValueError('only allowed when sourceBucket.mode is "import"; a new bucket gets a generated name')
        if name is not None and (not _BUCKET_RE.match(name) or ".." in name):
            raise ValueError(f"{name!r} is not a valid S3 bucket name; allowed: 3-63 of a-z 0-9 . -")
        return name

    @property
    def imported(self) -> bool:
        return self.mode == "import"


class EventFilterConfig(_Section):
    prefix: _KeyPart = ""
    suffix: _KeyPart = ""


class AccountAccessConfig(_Section):
    """An explicit grant to a consumer's whole account, narrowed by conditions on the calling principal.
    Validated with the consumer's account id as context "account": the patterns must lie within it."""

    principal_arn_like: tuple[_ListedStr, ...] = Field((), alias="principalArnLike")
    principal_org_id: _Matching(ORG_ID_RE, "an AWS Organizations id like 'o-a1b2c3d4e5'") | None = Field(
        None, alias="principalOrgId")

    @field_validator("principal_arn_like", mode="before")
    @classmethod
    def _list(cls, raw: Any) -> list:
        return _expect(raw, list)

    @field_validator("principal_arn_like")
    @classmethod
    def _in_account(cls, patterns: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        account = info.context["account"]

        def check(pattern: str, _: list) -> str:
            problem = principal_pattern_problem(pattern, account)
            if problem:
                raise ValueError(problem)
            return pattern
        return _each(list(patterns), check)

    @model_validator(mode="after")
    def _has_condition(self, info: ValidationInfo) -> AccountAccessConfig:
        if not self.principal_arn_like and self.principal_org_id is None:
            raise ValueError(
                f"grants account {info.context['account']} with no condition; allowed: principalArnLike (a list of "
                "role ARN patterns) and/or principalOrgId, which every statement of the grant then requires")
        return self

    def conditions(self) -> dict:
        return account_grant_conditions(self.principal_arn_like, self.principal_org_id)


class ConsumerConfig(_Section):
    """Validated with the event filter as context "event_filter" (when it is valid): a consumer's prefix
    must lie within the filter's, or the consumer would never receive an event."""

    name: _Required(CONSUMER_NAME_RE, CONSUMER_NAME_RULE) = Field(None, validate_default=True)
    # Left out: a consumer in the deploying account, whose queue and objects only its job role (made by the
    # stack) reads; no principal of any account is granted anything.
    account_id: _Matching(ACCOUNT_ID_RE, "a 12-digit AWS account id string, or leave the key out for a consumer "
                                         "that only the stack's own job role reads") | None = Field(
        None, alias="accountId")
    prefix: _KeyPart = ""
    max_receive_count: _Int(1, 1000) = Field(DEFAULT_MAX_RECEIVE_COUNT, alias="maxReceiveCount")
    visibility_timeout_seconds: _Int(0, 43200) = Field(300, alias="visibilityTimeoutSeconds")
    account_access: AccountAccessConfig | None = Field(None, alias="accountAccess")
    # The Glue database this consumer's job keeps Iceberg tables in; None when it writes no Iceberg table.
    iceberg_glue_database: _Matching(_GLUE_DATABASE_RE, (
        "1-255 lower-case letters, digits and '_' (the names Glue keeps and Athena reads), or leave the key out "
        "when the job writes no Iceberg table")) | None = Field(None, alias="icebergGlueDatabase")

    @field_validator("prefix")
    @classmethod
    def _within_event_filter(cls, prefix: str, info: ValidationInfo) -> str:
        problem = key_prefix_problem(prefix)
        if problem:  # the prefix scopes the consumer's grants, not only its subscription
            raise ValueError(problem)
        within = getattr((info.context or {}).get("event_filter"), "prefix", "")
        if prefix and not prefix.startswith(within):
            raise ValueError(f"{prefix!r} lies outside eventFilter.prefix {within!r}, so it would never receive an "
                             f"event; allowed: a prefix starting with {within!r}, or \"\"")
        return prefix

    @field_validator("account_access", mode="before")
    @classmethod
    def _for_account(cls, raw: Any, info: ValidationInfo) -> AccountAccessConfig | None:
        if raw is None or "account_id" not in info.data:  # without a valid account its error comes first
            return None
        if info.data["account_id"] is None:
            raise ValueError("needs the consumer's accountId: accountAccess grants that account")
        return AccountAccessConfig.model_validate(raw, context={"account": info.data["account_id"]})

    @property
    def construct_id(self) -> str:
        """CamelCase form of the name, for logical ids and output names ("raw-events" -> "RawEvents")."""
        return "".join(part[:1].upper() + part[1:] for part in self.name.split("-"))


_CONSUMERS = TypeAdapter(tuple[ConsumerConfig, ...])


class KmsConfig(_Section):
    """`mode` "managed": SQS-managed SSE on queues, S3-managed on buckets. "customer": one CMK for all."""

    mode: _Choice("managed", "customer") = "managed"

    @property
    def customer_managed(self) -> bool:
        return self.mode == "customer"


class _Capacity(_Section):
    """emr.maximumCapacity; EmrConfig shows it as max_vcpu, max_memory_gb and max_disk_gb."""

    vcpu: _Int(1, 4000) = 16
    memory_gb: _Int(2, 24000) = Field(64, alias="memoryGb", validate_default=True)  # checked against vcpu
    disk_gb: _Int(20, 200000) = Field(200, alias="diskGb")

    @field_validator("memory_gb")
    @classmethod
    def _per_vcpu(cls, memory: int, info: ValidationInfo) -> int:
        vcpu = info.data.get("vcpu")
        if vcpu is not None and not vcpu <= memory <= vcpu * 8:
            raise ValueError(f"{memory} GB for {vcpu} vCPU is not allowed; allowed: 1 to 8 GB per vCPU "
                             f"({vcpu} to {vcpu * 8})")
        return memory


class EmrConfig(_Section):
    # Spark 4 is the first with Python streaming sources; every emr-7.x and older ships Spark 3.
    release_label: Annotated[_Str, _allowed(lambda v: _RELEASE_RE.match(v) and v.startswith("emr-spark-"), (
        f"an EMR release with Spark 4, emr-spark-<major>.<minor>.<patch> such as {DEFAULT_RELEASE_LABEL!r} "
        "(emr-7.x ships Spark 3.5)"))] = Field(DEFAULT_RELEASE_LABEL, alias="releaseLabel")
    architecture: _Choice(*ARCHITECTURES) = "X86_64"
    maximum_capacity: _Capacity = Field(default_factory=_Capacity, alias="maximumCapacity")
    idle_timeout_minutes: _Int(1, 10080) = Field(15, alias="idleTimeoutMinutes")
    log_retention_days: Annotated[_Int(1, 3653), _allowed(_LOG_RETENTION_DAYS.__contains__, ", ".join(
        map(str, _LOG_RETENTION_DAYS)))] = Field(30, alias="logRetentionDays")

    @field_validator("maximum_capacity", mode="before")
    @classmethod
    def _empty_is_default(cls, raw: Any) -> Any:
        return raw or {}

    max_vcpu = property(lambda self: self.maximum_capacity.vcpu)
    max_memory_gb = property(lambda self: self.maximum_capacity.memory_gb)
    max_disk_gb = property(lambda self: self.maximum_capacity.disk_gb)


def _email(item: Any, before: list) -> str:
    value = _expect(item, str).strip()
    if len(value) > 254 or not _EMAIL_RE.match(value):
        raise ValueError(f"{value!r} is not an e-mail address; allowed: an address such as ops@example.com")
    if value.lower() in (o.lower() for o in before):
        raise ValueError(f"{value!r} is listed twice; allowed: each address once")
    return value


class AlarmConfig(_Section):
    dlq_messages_threshold: _Int(1, 1_000_000) = Field(1, alias="dlqMessagesThreshold")
    oldest_message_age_seconds: _Int(60, 1_209_600) = Field(900, alias="oldestMessageAgeSeconds")
    quarantined_files_threshold: _Int(1, 1_000_000) = Field(1, alias="quarantinedFilesThreshold")
    # Rows, not files: a batch holds many more of them. 1, as for files: a malformed row is a value that did
    # not reach its column (PERMISSIVE keeps the row, with nulls) or a row dropped (DROPMALFORMED).
    malformed_rows_threshold: _Int(1, 1_000_000_000) = Field(1, alias="malformedRowsThreshold")
    period_seconds: Annotated[_Int(60, 86400), _allowed(lambda s: s % 60 == 0, "a multiple of 60")] = Field(
        300, alias="periodSeconds")
    evaluation_periods: _Int(1, 100) = Field(1, alias="evaluationPeriods")
    emails: tuple[str, ...] = ()  # subscribed to the alarm topic; each confirms by e-mail

    @field_validator("emails", mode="before")
    @classmethod
    def _emails(cls, raw: Any) -> tuple[str, ...]:
        items = _expect([] if raw is None else raw, list)
        if len(items) > MAX_ALARM_EMAILS:
            raise ValueError(f"{len(items)} addresses; allowed: at most {MAX_ALARM_EMAILS} (use a mailing list, or "
                             "subscribe other endpoints to the AlarmTopicArn output)")
        return _each(items, _email)


@dataclass(frozen=True)  # derived from a StackConfig, never parsed
class ConsumerGrant:
    """Who acts for a consumer in resource policies: IAM principals, and conditions every statement carries."""

    principals: tuple[str, ...]
    conditions: dict = field(default_factory=dict)


def principal_account(principal_arn: str) -> str:
    m = _PRINCIPAL_RE.match(principal_arn)
    if not m:
        raise ValueError(principal_arn)
    return m.group(1)


def _principal(value: Any, before: list, accounts: list[str]) -> str:
    value = _expect(value, str)
    # A bare account id or its root would hand the consumer's grants to every principal of that account.
    whole = re.match(r"^(?:(\d{12})|arn:aws[a-z\-]*:iam::(\d{12}):root)$", value)
    if whole:
        acct = whole.group(1) or whole.group(2)
        raise ValueError(
            f"{value!r} grants the whole account {acct}; allowed: IAM role ARNs (arn:aws:iam::{acct}:role/<name>). "
            'To grant the account on purpose, give its consumer an "accountAccess" with principalArnLike and/or '
            "principalOrgId instead")
    m = _PRINCIPAL_RE.match(value)
    if not m or not m.group(2).startswith("role/"):
        raise ValueError(f"{value!r} is not allowed; allowed: an IAM role ARN arn:aws:iam::<account>:role/<name> "
                         "(roles, not users: a user carries long-term keys)")
    if m.group(1) not in accounts:
        raise ValueError(f"account {m.group(1)} is not the accountId of any consumer; allowed: principals in "
                         f"{', '.join(accounts)}")
    if value in before:
        raise ValueError(f"{value!r} is listed twice; allowed: each principal once")
    return value


SCHEDULE = "schedule"
DEFAULT_CLEANING_SCHEDULE = "rate(1 day)"
# The roles of the deploying account that may assume the source cleaner's role for `source-state clean --apply`.
OPERATOR_ROLES = "operatorRoles"
_ROLE_NAME_PATTERN_RE = re.compile(r"^[A-Za-z0-9_+=,.@/*?-]{1,512}\Z")


def _operator_role(item: Any, before: list) -> str:
    """A role name (or name pattern) of the deploying account: the stack names the account itself."""
    value = _expect(item, str)
    if value.startswith("arn:"):
        raise ValueError(f"{value!r} is an ARN; allowed: the role's name (or a name pattern such as 'data-ops-*'), "
                         "since only roles of the deploying account may assume the cleaner's role")
    if not _ROLE_NAME_PATTERN_RE.match(value) or not value.strip("*?/"):
        raise ValueError(f"{value!r} is not allowed; allowed: an IAM role name or name pattern of the deploying "
                         "account, such as 'data-ops' or 'data-ops-*' (not wildcards alone)")
    if value in before:
        raise ValueError(f"{value!r} is listed twice; allowed: each role once")
    return value


def cleaner_operator_roles(raw: Any, enabled: bool, schedule: str | None) -> tuple[str, ...]:
    """`sourceCleaning.operatorRoles`: who may run `source-state clean --apply` as the cleaner's role. Nobody by
    default (the stack's schedule runs it); with schedule "manual" somebody must."""
    items = _each(_expect([] if raw is None else raw, list), _operator_role)
    if items and not enabled:
        raise ValueError("only allowed when cleanSource is archive or delete; leave it out")
    if enabled and schedule is None and not items:
        raise ValueError("empty, and with schedule \"manual\" nobody could run the cleaner; allowed: the names of "
                         "the roles that run source-state clean --apply, such as [\"data-ops\"]")
    return items
_RATE_RE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_CRON_RE = re.compile(r"cron\(\S+( \S+){5}\)")


def cleaning_schedule(raw: Any) -> str | None:
    """`sourceCleaning.schedule`: an EventBridge schedule expression for the stack's cleaner function (default
    daily), or "manual" for none (run `source-state clean --apply` yourself)."""
    if raw is None:
        return DEFAULT_CLEANING_SCHEDULE
    text = str(raw).strip()
    if text == "manual":
        return None
    rate = _RATE_RE.fullmatch(text)
    if rate:
        n, unit = int(rate.group(1)), rate.group(2)
        if n < 1 or (n == 1) == unit.endswith("s") or (unit.startswith("minute") and n < 15):
            raise ValueError(f"{text!r} is not allowed; allowed: rate(1 day), rate(2 days), rate(6 hours), at least "
                             "rate(15 minutes) (EventBridge wants the singular unit for 1, the plural above)")
        return text
    if _CRON_RE.fullmatch(text):
        return text
    raise ValueError(f"{text!r} is not a schedule; allowed: an EventBridge expression such as rate(1 day) or "
                     "cron(0 3 * * ? *), or manual (the stack schedules nothing; run source-state clean --apply)")


class StackConfig(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    # In the order they are checked: consumers need the event filter, principals the consumers.
    event_filter: EventFilterConfig = Field(alias="eventFilter")
    consumers: tuple[ConsumerConfig, ...]
    cross_account_principals: tuple[str, ...] = Field((), alias="crossAccountPrincipals")
    source_bucket: SourceBucketConfig = Field(alias="sourceBucket")
    kms: KmsConfig = Field(default_factory=KmsConfig)
    emr: EmrConfig = Field(default_factory=EmrConfig)
    alarms: AlarmConfig = Field(default_factory=AlarmConfig)
    # Off unless cdk.json says archive or delete: then one role of the stack may clean the source bucket.
    source_cleaning: CleanSettings = Field(default_factory=CleanSettings, alias="sourceCleaning")
    # When the stack's function runs the cleaner (sourceCleaning.schedule, checked with the section above).
    cleaning_schedule: str | None = Field(DEFAULT_CLEANING_SCHEDULE, alias="sourceCleaningSchedule")
    # Who else may assume the cleaner's role (sourceCleaning.operatorRoles, checked with the section above).
    cleaning_operator_roles: tuple[str, ...] = Field((), alias="sourceCleaningOperatorRoles")

    @model_validator(mode="before")
    @classmethod
    def _schedule_of_cleaning(cls, values: Any) -> Any:
        if isinstance(values, dict) and isinstance(values.get("sourceCleaning"), dict):
            values = {**values, "sourceCleaningSchedule": values["sourceCleaning"].get(SCHEDULE),
                      "sourceCleaningOperatorRoles": values["sourceCleaning"].get(OPERATOR_ROLES)}
        return values

    @field_validator("cleaning_schedule", mode="before")
    @classmethod
    def _cleaning_schedule(cls, raw: Any) -> str | None:
        return cleaning_schedule(raw)

    @field_validator("cleaning_operator_roles", mode="before")
    @classmethod
    def _cleaning_operator_roles(cls, raw: Any) -> tuple[str, ...]:
        # Parsed as source_cleaning checked it (and named any error there): a JSON-text list comes in as a list.
        return _each(_expect([] if raw is None else raw, list), _operator_role)

    @field_validator("source_cleaning", mode="before")
    @classmethod
    def _cleaning(cls, raw: Any, info: ValidationInfo) -> CleanSettings:
        """The same grammar as every surface of the three settings (s3sqs.config.clean); an archive in the
        source bucket must lie outside what every consumer reads, or archived files would be read again."""
        raw = _expect({} if raw is None else raw, dict)
        try:
            schedule = cleaning_schedule(raw.get(SCHEDULE))
        except ValueError as e:
            raise _error_at((SCHEDULE,), str(e)) from None
        stack_only = {k: raw[k] for k in (SCHEDULE, OPERATOR_ROLES) if k in raw}
        raw = {k: v for k, v in raw.items() if k not in stack_only}
        try:
            settings = parse_clean_settings(raw)
        except CleanSettingsError as e:
            raise _error_at((e.setting,), e.reason) from None
        try:
            cleaner_operator_roles(stack_only.get(OPERATOR_ROLES), settings.enabled, schedule)
        except ValidationError as e:  # an item's error: its index is in the location
            raise _error_at((OPERATOR_ROLES, *e.errors()[0]["loc"]), e.errors()[0]["msg"]) from None
        except ValueError as e:
            raise _error_at((OPERATOR_ROLES,), str(e)) from None
        bucket, filters = info.data.get("source_bucket"), info.data.get("event_filter")
        if settings.enabled and bucket is not None and bucket.imported and filters is not None:
            prefixes = [c.prefix or filters.prefix for c in info.data.get("consumers", ())]
            overlap = archive_overlap(settings, bucket.bucket_name, prefixes)
            if overlap:
                raise _error_at(("sourceArchiveLocation",), overlap)
        return settings

    @field_validator("event_filter", "kms", "emr", "alarms", mode="before")
    @classmethod
    def _optional(cls, raw: Any) -> Any:
        return {} if raw is None else raw

    @field_validator("source_bucket", mode="before")
    @classmethod
    def _required(cls, raw: Any) -> Any:
        if raw is None:
            raise ValueError('missing; allowed: {"mode": "new"} or {"mode": "import", "bucketName": "..."}')
        return raw

    @field_validator("consumers", mode="before")
    @classmethod
    def _consumers(cls, raw: Any, info: ValidationInfo) -> tuple[ConsumerConfig, ...]:
        if raw is None:
            raise ValueError("missing; allowed: a non-empty list of consumer objects")
        items = _expect(raw, list)
        if not items:
            raise ValueError("empty; allowed: a non-empty list of consumer objects")
        if len(items) > 40:
            raise ValueError(f"{len(items)} consumers; allowed: at most 40 (CloudFormation output limits)")
        consumers = _CONSUMERS.validate_python(items, context={"event_filter": info.data.get("event_filter")})
        seen: dict[str, int] = {}
        for i, c in enumerate(consumers):
            if c.construct_id in seen:
                raise _error_at((i, "name"), f"{c.name!r} clashes with consumers[{seen[c.construct_id]}].name; "
                                             "allowed: unique names")
            seen[c.construct_id] = i
        return consumers

    @field_validator("cross_account_principals", mode="before")
    @classmethod
    def _principals(cls, raw: Any, info: ValidationInfo) -> tuple[str, ...]:
        items = _expect([] if raw is None else raw, list)
        accounts = sorted({c.account_id for c in info.data.get("consumers", ()) if c.account_id})
        return _each(items, lambda item, before: _principal(item, before, accounts))

    @model_validator(mode="after")
    def _one_grant_each(self) -> StackConfig:
        """Every consumer is granted to roles, or to its account with explicit conditions; never both, never neither.
        Checked once every section is valid."""
        for i, c in enumerate(self.consumers):
            if c.account_id is None:  # the stack's own job role reads it; nobody else is granted anything
                continue
            roles = [p for p in self.cross_account_principals if principal_account(p) == c.account_id]
            if c.account_access is not None and roles:
                raise _error_at(("consumers", i, "accountAccess"), (
                    f"account {c.account_id} also has roles in crossAccountPrincipals ({', '.join(roles)}); "
                    "allowed: one of the two. Drop accountAccess to grant just those roles"))
            if c.account_access is None and not roles:
                raise _error_at(("consumers", i), (
                    f"no principal for account {c.account_id}, and granting the whole account needs saying so; "
                    f"allowed: add its roles to crossAccountPrincipals (arn:aws:iam::{c.account_id}:role/<name>), "
                    f'or set consumers[{i}].accountAccess to {{"principalArnLike": '
                    f'["arn:aws:iam::{c.account_id}:role/<name-pattern>"]}} and/or {{"principalOrgId": "o-..."}}; '
                    "or, for a consumer whose job runs in the deploying account, leave accountId out"))
        return self

    def principals_for(self, consumer: ConsumerConfig) -> tuple[str, ...]:
        """The roles listed for the consumer's account; with `accountAccess`, the account root instead."""
        if consumer.account_id is None:
            return ()
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


def is_cdk_context_key(key: str) -> bool:
    return key.startswith(CDK_CONTEXT_PREFIXES) or key in CDK_CONTEXT_KEYS or bool(_LOOKUP_KEY_RE.match(key))


def check_context_keys(keys) -> None:
    """Every top-level context key is one of this app's or one of CDK's own."""
    unknown = sorted(k for k in keys if k not in CONTEXT_KEYS and not is_cdk_context_key(k))
    if not unknown:
        return
    first, others = unknown[0], unknown[1:]
    also = f"; also unknown: {', '.join(others)}" if others else ""
    raise ConfigError(
        f"{first}: unknown top-level context key{did_you_mean(first, CONTEXT_KEYS)}; allowed: "
        f"{', '.join(CONTEXT_KEYS)}, and CDK's own keys (feature flags @aws-cdk..., aws:cdk:..., cli-telemetry){also}"
    )


def _key(loc: tuple) -> str:
    """A pydantic error location as the context key it points at: ('consumers', 1, 'name') -> consumers[1].name."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def parse_config(context: Mapping[str, Any]) -> StackConfig:
    """Build the validated settings from a context mapping (cdk.json's "context", plus -c overrides)."""
    check_context_keys(context)
    try:
        # Every key given, null when absent: a missing section is reported, or defaults, as its field says.
        return StackConfig.model_validate({k: context.get(k) for k in CONTEXT_KEYS})
    except ValidationError as e:
        raise ConfigError(one_line(e, lambda loc: f"{_key(loc)}:")) from None


def config_from_node(node: Any) -> StackConfig:
    """Read the settings from a construct node's context (what `cdk synth` passes in: cdk.json's context,
    cdk.context.json and -c values), refusing keys that are neither this app's nor CDK's."""
    return parse_config(dict(node.get_all_context()))
