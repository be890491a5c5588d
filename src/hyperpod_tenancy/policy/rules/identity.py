"""Identity rules: Identity Center, the teams' groups, permission sets, POSIX GIDs and the POSIX identity webhook."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, SupplementalGroupsPolicy, Team, WebhookFailurePolicy
from hyperpod_tenancy.policy.rules._base import Domain, Finding, Severity, platform_rule, team_rule
from hyperpod_tenancy.policy.rules._common import valid_team_name

_PERMISSION_SET = re.compile(r"^[\w+=,.@-]{1,32}$")
#: Identity store group ID, as AWS::SSO::Assignment PrincipalId accepts it.
_GROUP_ID = re.compile(
    r"^([0-9a-f]{10}-|)[A-Fa-f0-9]{8}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{12}$"
)
#: POSIX IDs the platform hands out: above the system range, at most the largest ``runAsUser``/``runAsGroup``
#: Kubernetes accepts (``IsValidUserID``/``IsValidGroupID`` in k8s.io/apimachinery/pkg/util/validation:
#: "must be between 0 and 2147483647, inclusive").
_GID_RANGE = (1000, 2_147_483_647)
#: Fewest UIDs a ``posixIdentity.uidRange`` may hold: UIDs are never reused (a person's files on /fsx keep their
#: UID), so a range that runs out leaves every new person unable to run anything.
MIN_UID_RANGE_SIZE = 1000
#: The kernel's overflow UID (``/proc/sys/kernel/overflowuid``, ``nobody``): files of unmapped owners show it.
_OVERFLOW_UID = 65534
#: Highest UID the webhook allocates: 2^31 - 2 (the server's ``ID_MAX``; some tools treat 2^31 - 1 as invalid).
_UID_MAX = 2**31 - 2
#: Bounds of the webhook's ``timeoutSeconds``: the API accepts 1-30 (admissionregistration.k8s.io/v1
#: ``ValidatingWebhook.timeoutSeconds``: "The timeout value must be between 1 and 30 seconds").
WEBHOOK_TIMEOUT_RANGE = (1, 30)
#: Bounds of the webhook's ``cacheTtlSeconds``.
CACHE_TTL_RANGE = (1, 3600)
_POSIX = "cluster.posixIdentity"
#: A container image reference (the distribution reference grammar: ``[registry[:port]/]path[:tag][@digest]``,
#: lowercase path components, a tag of at most 128 word characters, a ``sha256`` digest of 64 hex digits).
_IMAGE_REFERENCE = re.compile(
    r"^(?P<name>(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>sha256:[a-f0-9]{64}))?$"
)


@team_rule(
    code="HPT-IDENTITY",
    domain=Domain.IDENTITY,
    at="teams[*].identity.groupId",
    reads=(),
    failure="a team assignment AWS::SSO::Assignment rejects, or that grants nobody",
    guardrail="`identity.groupId` must be an Identity Center group ID",
)
def group_id(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's Identity Center group ID is set and has the identity store's form."""
    path = f"teams[{i}].identity.groupId"
    if not team.identity.group_id:
        yield Finding(
            path, "the Identity Center group ID is empty.", "copy it from `aws identitystore list-groups`."
        )
    elif not _GROUP_ID.match(team.identity.group_id):
        yield Finding(
            path,
            f"{team.identity.group_id!r} is not an Identity Center group ID (a UUID, optionally prefixed by "
            "10 hex digits and '-'); AWS::SSO::Assignment would reject it as PrincipalId.",
            "copy the GroupId from `aws identitystore list-groups --identity-store-id d-...`.",
        )


@team_rule(
    code="HPT-IDENTITY-GROUP-SHARED",
    domain=Domain.IDENTITY,
    at="teams[*].identity.groupId",
    reads=(),
    failure="two teams assigned one Identity Center group: every member gets both permission sets, both "
    "namespaces and both budgets",
    guardrail="each team has its own `identity.groupId`",
)
def group_id_unique(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that no earlier team names the same Identity Center group."""
    group = team.identity.group_id.lower()
    owner = next((t.name for t in p.teams[:i] if group and t.identity.group_id.lower() == group), None)
    if owner is not None:
        yield Finding(
            f"teams[{i}].identity.groupId",
            f"{team.identity.group_id!r} is already the group of team {owner!r}: every member of it would get "
            f"both teams' permission sets, namespaces and quotas, and be billed to both.",
            "give every team its own Identity Center group; a person who works in both teams joins both groups.",
        )


@team_rule(
    code="HPT-POSIX-GID",
    domain=Domain.IDENTITY,
    at="teams[*].identity.posixGid",
    reads=(),
    failure="two teams sharing /fsx files through one POSIX GID, or a system GID",
    guardrail="`identity.posixGid` in 1000-2147483647 and unique per team",
)
def posix_gid(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's POSIX GID is outside the system range and no earlier team uses it."""
    gid = team.identity.posix_gid
    path = f"teams[{i}].identity.posixGid"
    lo, hi = _GID_RANGE
    if not lo <= gid <= hi:
        yield Finding(
            path, f"{gid} is outside 1000-2147483647.", "use a GID reserved for the team in your directory."
        )
        return
    owner = next((t.name for t in p.teams[:i] if t.identity.posix_gid == gid), None)
    if owner is not None:
        yield Finding(
            path,
            f"GID {gid} is already used by team {owner!r}; teams would share /fsx files.",
            "give every team its own GID.",
        )


@team_rule(
    code="HPT-IDENTITY",
    domain=Domain.IDENTITY,
    at="teams[*].identity.permissionSetName",
    reads=("teams[*].name",),
    failure="permission-set names over the Identity Center limit",
    guardrail="`identity.permissionSetName` (or the name derived from the team) fits 32 characters; "
    "the message shows the computed name",
)
def permission_set_name(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's permission set name, given or derived from the team name, is one Identity Center accepts."""
    path = f"teams[{i}].identity.permissionSetName"
    psn = team.identity.permission_set_name
    if psn is not None and not _PERMISSION_SET.match(psn):
        yield Finding(
            path, f"{psn!r} is not a valid permission set name.", "use at most 32 letters, digits or +=,.@-_."
        )
    elif psn is None and valid_team_name(team.name):
        default = names.permission_set(team.name)
        if len(default) > names.PERMISSION_SET_MAX:
            yield Finding(
                path,
                f"the default permission set name {default!r} derived from team {team.name!r} has {len(default)} "
                f"characters; Identity Center allows at most {names.PERMISSION_SET_MAX}.",
                f"set `identity.permissionSetName` to at most {names.PERMISSION_SET_MAX} letters, digits or "
                "+=,.@-_, or shorten the team name.",
            )


@platform_rule(
    code="HPT-POSIX-FAILURE-POLICY",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.failurePolicy",
    reads=(),
    failure="a webhook failure policy nobody chose: scheduling stopped by an outage, or pods writing to /fsx "
    "with the wrong identity",
    guardrail="`cluster.posixIdentity.failurePolicy` is set (`Fail` or `Ignore`); there is no default",
)
def posix_failure_policy(p: Platform) -> Iterator[Finding]:
    """Check that the platform owner chose what happens when the POSIX identity webhook does not answer."""
    if p.cluster.posix_identity.failure_policy is None:
        yield Finding(
            f"{_POSIX}.failurePolicy",
            "no failure policy is set for the POSIX identity webhook (required, no default).",
            f"add `posixIdentity: {{failurePolicy: {WebhookFailurePolicy.FAIL.value}}}` under `cluster:` "
            "(while the webhook or DynamoDB does not answer, no workload starts in a team namespace) or "
            f"`failurePolicy: {WebhookFailurePolicy.IGNORE.value}` (work keeps being scheduled, but its pods may "
            "run as another person's UID and write to /fsx as them); the platform owner decides.",
        )


@platform_rule(
    code="HPT-POSIX-UID-RANGE",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.uidRange",
    reads=("teams[*].identity.posixGid",),
    failure="system UIDs given to people, a range Kubernetes rejects, one that runs out, or a UID equal to a "
    "team GID",
    guardrail=f"`uidRange` within 1000-{_UID_MAX}, `first <= last`, at least {MIN_UID_RANGE_SIZE} UIDs, "
    "without the overflow UID 65534 or any team's `posixGid`",
)
def posix_uid_range(p: Platform) -> Iterator[Finding]:
    """Check that the UID range is outside the system range, valid for Kubernetes and large enough."""
    r = p.cluster.posix_identity.uid_range
    lo, hi = _GID_RANGE[0], _UID_MAX
    path = f"{_POSIX}.uidRange"
    inside = [t for t in p.teams if r.first <= t.identity.posix_gid <= r.last]
    if not (lo <= r.first <= hi and lo <= r.last <= hi):
        yield Finding(
            path,
            f"{r.first}-{r.last} is not within {lo}-{hi} (below 1000 are system users; Kubernetes accepts no "
            "runAsUser above 2147483647 and some tools treat 2147483647 itself as invalid).",
            "pick a range no directory hands out, e.g. `{first: 200000, last: 299999}`.",
        )
    elif r.first > r.last:
        yield Finding(
            path, f"first ({r.first}) is after last ({r.last}).", "swap them: `first` is the lowest UID."
        )
    elif r.size < MIN_UID_RANGE_SIZE:
        yield Finding(
            path,
            f"{r.first}-{r.last} holds {r.size} UIDs; UIDs are never reused, so it would soon run out and new "
            "people could not run anything.",
            f"give it at least {MIN_UID_RANGE_SIZE} UIDs (e.g. `last: {r.first + 99_999}`).",
        )
    elif r.first <= _OVERFLOW_UID <= r.last:
        yield Finding(
            path,
            f"{r.first}-{r.last} contains {_OVERFLOW_UID}, the kernel's overflow UID (`nobody`), which files of "
            "unmapped owners show.",
            "start the range above 65535 (e.g. `first: 200000`) or end it below 65534.",
        )
    elif inside:
        yield Finding(
            path,
            f"{r.first}-{r.last} contains the POSIX GID of team(s) "
            + ", ".join(f"{t.name!r} ({t.identity.posix_gid})" for t in inside)
            + "; the webhook refuses a UID range that overlaps a team GID, so a UID is never mistaken for a team.",
            "move the range above the team GIDs (e.g. `first: 200000`) or renumber the teams.",
        )


def _seconds_within(
    value: int, bounds: tuple[int, int], *, key: str, what: str, fix: str
) -> Iterator[Finding]:
    lo, hi = bounds
    if not lo <= value <= hi:
        yield Finding(f"{_POSIX}.{key}", f"{value} is outside {lo}-{hi} seconds, {what}.", fix)


@platform_rule(
    code="HPT-POSIX-WEBHOOK-TIMEOUT",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.timeoutSeconds",
    reads=(),
    failure="a MutatingWebhookConfiguration the API server rejects",
    guardrail="`timeoutSeconds` in 1-30 (the API's bounds)",
)
def posix_webhook_timeout(p: Platform) -> Iterator[Finding]:
    """Check the webhook timeout against the bounds the Kubernetes API accepts."""
    yield from _seconds_within(
        p.cluster.posix_identity.timeout_seconds,
        WEBHOOK_TIMEOUT_RANGE,
        key="timeoutSeconds",
        what="the timeouts Kubernetes accepts for an admission webhook",
        fix="use e.g. 5: the webhook answers cached identities in milliseconds, a first allocation in one "
        "DynamoDB round trip.",
    )


@platform_rule(
    code="HPT-POSIX-CACHE-TTL",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.cacheTtlSeconds",
    reads=(),
    failure="every admission reading DynamoDB (no cache), or a cache no one can reason about",
    guardrail=f"`cacheTtlSeconds` in {CACHE_TTL_RANGE[0]}-{CACHE_TTL_RANGE[1]}",
)
def posix_cache_ttl(p: Platform) -> Iterator[Finding]:
    """Check the webhook's in-memory identity cache lifetime."""
    yield from _seconds_within(
        p.cluster.posix_identity.cache_ttl_seconds,
        CACHE_TTL_RANGE,
        key="cacheTtlSeconds",
        what="the cache lifetimes the platform accepts",
        fix="use e.g. 300 (a UID never changes once allocated, so the TTL only bounds memory and staleness).",
    )


@platform_rule(
    code="HPT-POSIX-IMAGE",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.imageUri",
    reads=(),
    failure="a webhook Deployment that never pulls (a malformed reference) or whose replicas run different "
    "code (a mutable tag such as `latest`): with `failurePolicy: Fail` no team workload starts",
    guardrail="`imageUri`, when set, is an image reference pinned by a tag other than `latest` or by a digest",
)
def posix_image(p: Platform) -> Iterator[Finding]:
    """Check the webhook image the platform names instead of the one ``cdk deploy`` builds."""
    image = p.cluster.posix_identity.image_uri
    if image is not None:
        yield from image_reference_findings(image, path=f"{_POSIX}.imageUri")


def image_reference_findings(image: str, *, path: str) -> Iterator[Finding]:
    """Yield findings for a webhook image reference that is malformed or not pinned (shared with the construct)."""
    match = _IMAGE_REFERENCE.match(image)
    if match is None:
        yield Finding(
            path,
            f"{image!r} is not a container image reference.",
            "use `<registry>/<repository>:<tag>` or `...@sha256:<digest>`, e.g. "
            "`111122223333.dkr.ecr.us-east-1.amazonaws.com/hyperpod-tenancy-webhook:0.1.0`, or leave it unset "
            "to have `cdk deploy` build the image from the installed package.",
        )
    elif match["digest"] is None and match["tag"] in {None, "latest"}:
        yield Finding(
            path,
            f"{image!r} is not pinned: without a tag or digest (or with `latest`) the two replicas and every "
            "node replacement may pull different code.",
            "pin a release tag (`:0.1.0`) or a digest (`@sha256:...`).",
        )


#: A Kubernetes group name as the break-glass group may be written (no whitespace, at most 253 characters).
_GROUP_NAME = re.compile(r"^[^\s]{1,253}$")


@platform_rule(
    code="HPT-POSIX-BREAK-GLASS",
    domain=Domain.IDENTITY,
    at=f"{_POSIX}.breakGlassGroup",
    reads=(),
    failure="every team member, or every authenticated user, allowed into every teammate's pod",
    guardrail="`breakGlassGroup` is neither a team's Kubernetes group nor a `system:` group",
)
def posix_break_glass_group(p: Platform) -> Iterator[Finding]:
    """Check that the break-glass group names a few on-call people, not a team or everyone."""
    group = p.cluster.posix_identity.break_glass_group
    if group is None:
        return
    path = f"{_POSIX}.breakGlassGroup"
    teams = {names.kubernetes_group(t.name): t.name for t in p.teams}
    if not _GROUP_NAME.match(group):
        yield Finding(
            path, f"{group!r} is not a Kubernetes group name.", "write the group name without spaces."
        )
    elif group in teams:
        yield Finding(
            path,
            f"{group!r} is team {teams[group]!r}'s Kubernetes group: every member of it could reach into every "
            "teammate's pods.",
            "name a group only the platform's on-call people are mapped to (an EKS access entry's kubernetesGroups).",
        )
    elif group.startswith("system:"):
        yield Finding(
            path,
            f"{group!r} is a group Kubernetes assigns itself (e.g. every authenticated user or service account).",
            "name a group only the platform's on-call people are mapped to (an EKS access entry's kubernetesGroups).",
        )


#: First Kubernetes minor version whose API server and kubelet serve ``supplementalGroupsPolicy`` by default
#: (KEP-3619: alpha behind a feature gate in 1.31, beta and on by default in 1.33).
STRICT_GROUPS_MIN_VERSION = (1, 33)
_GROUPS_POLICY = f"{_POSIX}.supplementalGroupsPolicy"


def _minor(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else (0, 0)


@platform_rule(
    code="HPT-POSIX-STRICT-GROUPS-VERSION",
    domain=Domain.IDENTITY,
    at=_GROUPS_POLICY,
    reads=("cluster.kubernetesVersion",),
    failure="every tenant pod refused, or the field silently dropped, on a Kubernetes without the feature",
    guardrail="`supplementalGroupsPolicy: strict` needs Kubernetes 1.33 or later",
)
def posix_strict_groups_version(p: Platform) -> Iterator[Finding]:
    """Check that ``strict`` is asked for only where the API server and kubelet serve the field by default."""
    spec = p.cluster.posix_identity
    if spec.supplemental_groups_policy is not SupplementalGroupsPolicy.STRICT:
        return
    if _minor(p.cluster.kubernetes_version) < STRICT_GROUPS_MIN_VERSION:
        yield Finding(
            _GROUPS_POLICY,
            f"`strict` on Kubernetes {p.cluster.kubernetes_version}: supplementalGroupsPolicy is beta and on by "
            "default from 1.33 only; before, the API server drops the field and the validating policy would refuse "
            "every pod.",
            "set `cluster.kubernetesVersion` to 1.33 or later, or `supplementalGroupsPolicy: auto`.",
        )


@platform_rule(
    code="HPT-POSIX-SUPPLEMENTAL-GROUPS",
    domain=Domain.IDENTITY,
    at=_GROUPS_POLICY,
    reads=("cluster.kubernetesVersion",),
    failure="an image's /etc/group adding its user to another team's GID, opening that team's FSx directories",
    guardrail="warning where no pod can get `supplementalGroupsPolicy: Strict` (`merge`, or `auto` before "
    "Kubernetes 1.33); under `auto` the webhook logs the same code while a node does not support it",
    severity=Severity.WARNING,
)
def posix_supplemental_groups(p: Platform) -> Iterator[Finding]:
    """Warn where tenant pods can never run with ``supplementalGroupsPolicy: Strict``."""
    policy = p.cluster.posix_identity.supplemental_groups_policy
    if policy is SupplementalGroupsPolicy.MERGE:
        what = "`merge`: tenant pods never ask for supplementalGroupsPolicy: Strict"
    elif (
        policy is SupplementalGroupsPolicy.AUTO
        and _minor(p.cluster.kubernetes_version) < STRICT_GROUPS_MIN_VERSION
    ):
        what = (
            f"`auto` on Kubernetes {p.cluster.kubernetes_version}: no node reports support before 1.33, so the "
            "webhook never sets supplementalGroupsPolicy: Strict"
        )
    else:
        return
    yield Finding(
        _GROUPS_POLICY,
        f"{what}. The container runtime then adds the groups an image's /etc/group lists for its user, so a "
        "crafted image can join another team's GID and read its FSx directories.",
        "run trusted images only, or use Kubernetes 1.33 or later with `supplementalGroupsPolicy: auto` (or "
        "`strict` once every node reports it: `kubectl get nodes -o jsonpath='{.items[*].status.features}'`).",
    )
