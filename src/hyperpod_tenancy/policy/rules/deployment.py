"""Deployment rules: account, region, Kubernetes version, the HyperPod chart, replacements, node AMIs."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy import fairness
from hyperpod_tenancy.policy.model import HelmChartSource, Platform
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Severity,
    Stage,
    platform_rule,
)
from hyperpod_tenancy.policy.rules._common import (
    ACCOUNT,
    REGION,
    SUPPORTED_KUBERNETES_VERSIONS,
)


@platform_rule(
    code="HPT-ACCOUNT",
    domain=Domain.DEPLOYMENT,
    at="account",
    reads=(),
    failure="an unquoted or mistyped account ID (YAML reads `012345678901` as a number)",
    guardrail="`account` must be a 12-digit string",
)
def account(p: Platform) -> Iterator[Finding]:
    """Check that the account is a 12-digit AWS account ID."""
    if not ACCOUNT.match(p.account):
        yield Finding(
            "account",
            f"{p.account!r} is not a 12-digit AWS account ID.",
            'quote the account ID, e.g. "111122223333".',
        )


@platform_rule(
    code="HPT-REGION",
    domain=Domain.DEPLOYMENT,
    at="region",
    reads=(),
    failure="a stack environment CloudFormation cannot deploy to",
    guardrail="`region` must be an AWS region name",
)
def region(p: Platform) -> Iterator[Finding]:
    """Check that the platform's region is an AWS region name."""
    if not REGION.match(p.region):
        yield Finding("region", f"{p.region!r} is not an AWS region name.", "use e.g. `us-east-1`.")


@platform_rule(
    code="HPT-K8S-VERSION",
    domain=Domain.DEPLOYMENT,
    at="cluster.kubernetesVersion",
    reads=(),
    failure="a Kubernetes version Task Governance, the kubectl layer or the tests do not cover",
    guardrail=f"`cluster.kubernetesVersion` must be one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}",
)
def kubernetes_version(p: Platform) -> Iterator[Finding]:
    """Check that the cluster runs a Kubernetes version this release supports."""
    c = p.cluster
    if c.kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
        yield Finding(
            "cluster.kubernetesVersion",
            f"{c.kubernetes_version!r} is not supported.",
            f"use one of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (Task Governance needs 1.30 or later).",
        )


@platform_rule(
    code="HPT-HELM-CHART",
    domain=Domain.DEPLOYMENT,
    at="cluster.hyperpodHelmChart",
    reads=(),
    failure="the HyperPod dependencies chart pulled from nowhere, or from two places",
    guardrail="exactly one of `ociRepository` (with `oci://` and a `version`) or `directory`",
)
def helm_chart(p: Platform) -> Iterator[Finding]:
    """Check that the HyperPod chart comes from exactly one source: an OCI repository with a version, or a directory."""
    yield from chart_source_findings(
        p.cluster.hyperpod_helm_chart, path="cluster.hyperpodHelmChart", chart="hyperpod/hyperpod-helm-chart"
    )


@platform_rule(
    code="HPT-USAGE-REPORT-CHART",
    domain=Domain.DEPLOYMENT,
    at="chargeback.usageReportChart",
    reads=(),
    failure="the usage-report operator's chart pulled from nowhere, or from two places",
    guardrail="when set, exactly one of `ociRepository` (with `oci://` and a `version`) or `directory`",
)
def usage_report_chart(p: Platform) -> Iterator[Finding]:
    """Check the usage-report operator's chart source, like the HyperPod chart's."""
    chart = p.chargeback.usage_report_chart if p.chargeback else None
    if chart is not None:
        yield from chart_source_findings(
            chart, path="chargeback.usageReportChart", chart="hyperpod/sagemaker-hyperpod-usage-report"
        )


def chart_source_findings(h: HelmChartSource, *, path: str, chart: str) -> Iterator[Finding]:
    """Yield findings for a mirrored Helm chart with no source, two sources, or an OCI source without a version."""
    if bool(h.directory) == bool(h.oci_repository):
        state = (
            f"both `ociRepository` ({h.oci_repository!r}) and `directory` ({h.directory!r}) are set"
            if h.directory
            else "neither `ociRepository` nor `directory` is set"
        )
        yield Finding(
            path,
            f"{state}; exactly one is needed.",
            "mirror the chart to your registry and set `ociRepository` + `version`, or vendor it as "
            "`directory`.",
        )
    elif h.oci_repository and (not h.oci_repository.startswith("oci://") or not h.version):
        yield Finding(
            f"{path}.ociRepository",
            f"{h.oci_repository!r} needs the oci:// scheme and a `version`.",
            f"write e.g. `ociRepository: oci://<account>.dkr.ecr.<region>.amazonaws.com/{chart}` and "
            "`version: 0.1.0`.",
        )


@platform_rule(
    code="HPT-REGION-TASK-GOVERNANCE",
    domain=Domain.DEPLOYMENT,
    at="region",
    reads=("fairnessBackend",),
    failure="Task Governance resource types not confirmed in the region",
    guardrail="warning: check `aws cloudformation describe-type` there, or use `fairnessBackend: kueue`",
    severity=Severity.WARNING,
)
def task_governance_region(p: Platform) -> Iterator[Finding]:
    """Task Governance's resource types are confirmed in the platform's region."""
    for problem in fairness.fairness_of(p).region_problems(p):
        yield Finding(*problem)


def _replacement(code: str, failure: str) -> Guardrail:
    return Guardrail(
        code=code,
        stage=Stage.BASELINE,
        severity=Severity.WARNING,
        domain=Domain.DEPLOYMENT,
        failure=failure,
        guardrail="stateful resources retained; `hyperpod-tenancy validate --baseline` (or a stage `baseline`) warns",
    )


#: ``hyperpod-tenancy validate --baseline`` warnings (:mod:`hyperpod_tenancy.policy.changes`).
REPLACEMENTS = (
    _replacement(
        "HPT-REPLACE-STACKS",
        "a changed platform `name` creates a second set of stacks beside the deployed ones",
    ),
    _replacement(
        "HPT-REPLACE-CLUSTER", "a createOnly change replaces (and deletes) the HyperPod or EKS cluster"
    ),
    _replacement(
        "HPT-REPLACE-VPC",
        "a changed `vpcCidr` or zone list replaces the VPC, which the EKS cluster cannot follow",
    ),
    _replacement(
        "HPT-REPLACE-FSX",
        "a changed FSx `deploymentType` replaces the file system; the data stay on the old one",
    ),
    _replacement(
        "HPT-REPLACE-TEAM", "a renamed, removed or kept-off team loses its quota, namespace and running jobs"
    ),
    _replacement(
        "HPT-REPLACE-PERMISSION-SET",
        "a changed permission set name, Identity Center instance or Identity Center account replaces the "
        "team's Identity Center access",
    ),
    _replacement(
        "HPT-REPLACE-KEY",
        "a changed `encryption.kmsKey` replaces the FSx file system (empty) and, with Studio, the domains, whose "
        "fixed names make the update fail",
    ),
    _replacement(
        "HPT-UPGRADE-KUBERNETES",
        "a Kubernetes version change EKS refuses (a skipped minor, a downgrade), or one that interrupts nodes",
    ),
    _replacement(
        "HPT-UPGRADE-SCHEDULER",
        "another fairness backend or Kueue chart deletes or restarts the queues running work depends on",
    ),
    _replacement(
        "HPT-UPGRADE-MIG",
        "a changed MIG layout stops every pod on the group's GPUs and may reboot its nodes",
    ),
)

#: Construct validation of :class:`~hyperpod_tenancy.constructs.SharedHyperPodCluster`.
NODEGROUP_AMI = Guardrail(
    code="HPT-NODEGROUP-AMI",
    stage=Stage.SYNTH,
    severity=Severity.ERROR,
    domain=Domain.DEPLOYMENT,
    failure="a node group on an AMI family EKS no longer publishes (AL2 on Kubernetes ≥ 1.33) rolls the stack back",
    guardrail="synth error naming the node group and the AL2023 fix",
)

#: The team selection of a synthesis (:func:`~hyperpod_tenancy.policy.selection.select_teams`, ``-c teams=``).
TEAM_SELECTION = Guardrail(
    code="HPT-TEAM-SELECTION",
    stage=Stage.SYNTH,
    severity=Severity.ERROR,
    domain=Domain.DEPLOYMENT,
    failure="a misspelt team in `-c teams=` synthesizing the shared stacks alone, whose deploy would drop "
    "the exports the deployed teams import",
    guardrail="every selected name must be a hosted team and at least one is named; the error names the "
    "closest team, before anything is written",
)

#: What the constructs check of what a user's own app gives them (a VPC, its CDK context, objects of its own).
USER_APP: tuple[Guardrail, ...] = (
    Guardrail(
        code="HPT-VPC-CIDR-GIVEN",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.NETWORKING,
        failure="a VPC given to the cluster whose blocks differ from `cluster.vpcCidr`: team egress excluding the "
        "wrong range lets team pods reach the whole VPC",
        guardrail="team NetworkPolicies exclude every IPv4 block of the VPC in use (secondary ones included; a block "
        "unknown at synth is an error naming `vpc_cidr_blocks`), and a warning names both when they differ",
    ),
    Guardrail(
        code="HPT-FEATURE-FLAGS",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.DEPLOYMENT,
        failure="an app without this repository's `cdk.json` silently synthesizing different templates",
        guardrail="construct props set what the flags would (VPC default group, native OIDC provider); a warning "
        "names each remaining flag that is off and what changes",
    ),
    Guardrail(
        code="HPT-ADMISSION-WARN",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.SCHEDULING,
        failure="objects added to a team (`add_manifest`) that admission refuses only at deploy",
        guardrail="the team's admission policies (their CEL) run at synth on the added objects: a Deny is an error "
        "naming the object, the policy and its message, a Warn this warning",
    ),
)

#: Synth-time warnings of :class:`~hyperpod_tenancy.constructs.chargeback.chargeback_pipeline.ChargebackPipeline`.
CHARGEBACK_PIPELINE: tuple[Guardrail, ...] = (
    Guardrail(
        code="HPT-CHARGEBACK-DATA-EXPORT",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.CHARGEBACK,
        failure="AWS::BCMDataExports::Export outside us-east-1 (and the few other regions that have it natively) fails to deploy",
        guardrail="no export there; a warning naming the documented alternative (create the export from us-east-1 into the report bucket's cur/)",
    ),
    Guardrail(
        code="HPT-CHARGEBACK-ALERT",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.CHARGEBACK,
        failure="without a Prometheus workspace, GPU-hours lost to preemption surface only in the month-end report",
        guardrail="warning that the same-day preemption alert is missing",
    ),
    Guardrail(
        code="HPT-CHARGEBACK-OPERATOR",
        stage=Stage.SYNTH,
        severity=Severity.WARNING,
        domain=Domain.CHARGEBACK,
        failure="without the usage-report operator nothing writes the Kueue snapshots, and every team's usage reads as zero",
        guardrail="warning naming the operator's chart and the report bucket's raw/ prefix it must write to",
    ),
)

#: Reading ``platform.yaml`` (:mod:`hyperpod_tenancy.policy.loader`).
LOADING = (
    Guardrail(
        code="HPT-YAML",
        stage=Stage.LOAD,
        severity=Severity.ERROR,
        domain=Domain.DEPLOYMENT,
        failure="a YAML syntax error, or a duplicate key silently keeping only the last value",
        guardrail="the file is parsed strictly; the error names the line and column",
    ),
    Guardrail(
        code="HPT-SCHEMA",
        stage=Stage.LOAD,
        severity=Severity.ERROR,
        domain=Domain.DEPLOYMENT,
        failure="a misspelt key or a wrongly typed value silently replaced by a default",
        guardrail="unknown keys, missing required keys and wrong types are errors, with did-you-mean hints",
    ),
)
