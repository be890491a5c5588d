"""``hyperpod-tenancy onboarding TEAM [PATH]``: what a member of a team needs to submit work, and offboarding.

Prints, from the policy alone (:func:`hyperpod_tenancy.k8s.onboarding.onboarding_facts`, the same function whose
values the team stack outputs): the ``aws sso login`` profile and the ``~/.aws/config`` lines it needs, how to
reach the cluster's private API endpoint, ``aws eks update-kubeconfig``, the namespace, queue, priority classes
and their checkpoint rules, the FSx and home directories, the S3 prefix and the Studio domain; values that exist
only once deployed are printed as the ``aws cloudformation`` command that reads them (``describe-stacks`` of the
team stack, ``describe-stack-resources`` of the cluster stack). Then the sample ``kubectl`` manifest and ``hyp``
command line (none on ``fairnessBackend: kueue``, which refuses the kind), or, with ``--write-dir DIR``, writes
them as ``DIR/<team>-job.yaml`` and ``DIR/<team>-hyp.sh``.

``--offboard PERSON`` prints the offboarding runbook of a person (their Identity Center user name) instead:
revoke, stop their work, keep their UID record, archive and remove their home directory; with ``--uid N
--archive-job`` it prints only the Job that archives and removes ``/fsx/<team>/home/<N>`` (for ``kubectl create
-f -``). It runs nothing itself.

The Identity Center access portal URL is not in the policy: ``--sso-start-url``, else the
``hyperpod-tenancy:ssoStartUrl`` context of ``cdk.json`` beside the policy file (the value the team stacks use).

Exit status: 0; 1 when the policy cannot be read or is invalid, or the team is not on the cluster; 2 on usage.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from hyperpod_tenancy.k8s.onboarding import OnboardingFacts
    from hyperpod_tenancy.policy.model import Platform

PROG = "hyperpod-tenancy"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``onboarding`` subcommand and its arguments to ``commands``."""
    onboarding = commands.add_parser(
        "onboarding",
        help="print what a team member needs (profile, cluster, queue, paths) and sample submissions",
        description="Print what a member of TEAM needs to submit work, with a kubectl manifest and a hyp command "
        "line; or, with --offboard, the runbook that offboards a person.",
    )
    onboarding.add_argument("team", metavar="TEAM", help="a team of the policy")
    onboarding.add_argument(
        "path",
        nargs="?",
        default="platform.yaml",
        type=Path,
        metavar="PATH",
        help="policy file (default: platform.yaml)",
    )
    onboarding.add_argument(
        "--write-dir",
        metavar="DIR",
        type=Path,
        help="write DIR/<team>-job.yaml and DIR/<team>-hyp.sh instead of printing them",
    )
    onboarding.add_argument(
        "--sso-start-url",
        metavar="URL",
        help="the AWS access portal URL (default: the hyperpod-tenancy:ssoStartUrl context of cdk.json beside PATH)",
    )
    onboarding.add_argument(
        "--offboard",
        metavar="PERSON",
        help="print the offboarding runbook of PERSON (Identity Center user name)",
    )
    onboarding.add_argument(
        "--uid",
        type=int,
        metavar="N",
        help="with --offboard: the person's UID (step 3 of the runbook reads it)",
    )
    onboarding.add_argument(
        "--archive-job",
        action="store_true",
        help="with --offboard and --uid: print only the Job archiving and removing the home directory",
    )


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``onboarding``: print the facts and samples (or write them), or the offboarding runbook.

    Returns:
        0, or 1 when the policy cannot be loaded, the team is not on the cluster or a file cannot be written.

    """
    from hyperpod_tenancy.k8s import onboarding  # noqa: PLC0415 - see the tools package

    problem = _usage_problem(args)
    if problem is not None:
        print(f"{PROG}: error: {problem}", file=err)
        return 2
    platform = _load(args.path, err)
    if platform is None:
        return 1
    start_url = args.sso_start_url or _context_start_url(args.path, onboarding.SSO_START_URL_CONTEXT)
    try:
        facts = onboarding.onboarding_facts(platform, args.team, sso_start_url=start_url)
    except onboarding.UnknownTeamError as exc:
        print(f"{PROG}: error: {exc}.", file=err)
        return 1
    if args.offboard is not None:
        return _offboard(platform, facts, args, out=out, err=err)
    for line in facts_lines(facts, platform):
        print(line, file=out)
    job = _yaml(onboarding.kubectl_job(facts))
    # admission refuses HyperPodPyTorchJob on the kueue backend: no hyp sample there
    hyp = onboarding.hyp_script(facts) if facts.hyp_supported else None
    if args.write_dir is None:
        print(f"\n# {facts.team}-job.yaml (kubectl apply -f {facts.team}-job.yaml)", file=out)
        print(job, end="", file=out)
        if hyp is not None:
            print(f"\n# {facts.team}-hyp.sh", file=out)
            print(hyp, end="", file=out)
        return 0
    return _write(args.write_dir, facts.team, job=job, hyp=hyp, out=out, err=err)


def _usage_problem(args: argparse.Namespace) -> str | None:
    """Return what is wrong with the combination of options, or None."""
    if (args.uid is not None or args.archive_job) and args.offboard is None:
        return "--uid and --archive-job go with --offboard PERSON."
    if args.archive_job and args.uid is None:
        return "--archive-job needs --uid N (step 3 of the runbook reads it)."
    if args.offboard is not None and (not args.offboard or any(c.isspace() for c in args.offboard)):
        return f"--offboard {args.offboard!r} is not an Identity Center user name."
    return None


def _write(directory: Path, team: str, *, job: str, hyp: str | None, out: TextIO, err: TextIO) -> int:
    """Write the samples to ``directory`` (the ``hyp`` script when there is one); return the exit status."""
    job_path = directory / f"{team}-job.yaml"
    hyp_path = directory / f"{team}-hyp.sh"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        job_path.write_text(job, encoding="utf-8")
        if hyp is not None:
            hyp_path.write_text(hyp, encoding="utf-8")
            hyp_path.chmod(0o755)
    except OSError as exc:
        print(f"{PROG}: error: cannot write to {str(directory)!r}: {exc.strerror or exc}.", file=err)
        return 1
    written = f" and {hyp_path}" if hyp is not None else ""
    print(f"\nwrote {job_path} (kubectl apply -f {job_path}){written}", file=out)
    return 0


def facts_lines(facts: OnboardingFacts, platform: Platform) -> list[str]:
    """Return the printed facts of a team, one string per line."""
    from hyperpod_tenancy.k8s import onboarding  # noqa: PLC0415 - see the tools package

    outputs = onboarding.DEPLOY_TIME_OUTPUTS
    where = (
        f"the team's own account {facts.account}, the cluster in {facts.cluster_account}"
        if facts.in_own_account
        else f"account {facts.account}"
    )
    lines = [
        f"Team {facts.team} on cluster {facts.cluster} (platform {facts.platform}, {where}, region {facts.region})",
        "",
        "1. Sign in with your own Identity Center user (not the Studio execution role: the cluster refuses "
        "work submitted as it).",
        "   ~/.aws/config:",
        f"     [sso-session {facts.sso_session}]",
        f"     sso_start_url = {facts.start_url_hint}",
        f"     sso_region = {facts.sso_region}",
        "     sso_registration_scopes = sso:account:access",
        f"     [profile {facts.profile}]",
        f"     sso_session = {facts.sso_session}",
        f"     sso_account_id = {facts.account}",
        f"     sso_role_name = {facts.permission_set}",
        f"     region = {facts.region}",
        f"   aws sso login --profile {facts.profile}",
        "",
        f"2. Reach the API endpoint: it is private, inside the cluster's VPC ({facts.vpc_cidr}).",
    ]
    if facts.studio_domain is not None:
        lines += [
            f"   From Studio: a JupyterLab or Code Editor space of domain {facts.studio_domain}; its lifecycle "
            "configuration writes the profile above; in its terminal run hyperpod_login (sign-in with a device "
            "code, then the kubeconfig"
            + (
                f": the domain's VPC in {facts.account} is peered with the cluster's, and the context is written "
                "from what the domain describes of the cluster; nothing below is needed there)."
                if facts.in_own_account
                else ")."
            ),
        ]
    lines += [
        "   Elsewhere: a network path into the VPC that the platform team admits to the endpoint on 443 "
        "(a bastion, VPN or Direct Connect; SharedHyperPodCluster.allow_api_access_from).",
        *_kubeconfig_lines(facts),
        "",
        "3. Where your work goes",
        f"   namespace      {facts.namespace}",
        f"   queue          {facts.local_queue}   (label kueue.x-k8s.io/queue-name)",
        "   priority       (label kueue.x-k8s.io/priority-class)",
    ]
    for rule in facts.classes:
        if rule.checkpoint_required:
            rule_text = f"checkpoint required, interval at most {rule.max_checkpoint_interval}: " + "; ".join(
                rule.checkpoint_reasons
            )
        else:
            rule_text = "no checkpoint required"
        lines.append(f"     {rule.workload_priority_class:<28} weight {rule.weight:<4} {rule_text}")
    lines += [
        f"   checkpoints    {_declaration()}; missing where required: "
        f"{'denied' if facts.checkpoint_enforcement == 'deny' else 'a warning'}",
        f"   hyp            {'admitted' if facts.hyp_supported else 'hyp-pytorch-job is refused on fairnessBackend kueue: use kubectl (or a Kubeflow PyTorchJob)'}",
        "",
        "4. Storage",
        f"   FSx            {facts.fsx_directory}   (claim {facts.fsx_claim} in {facts.namespace}; team group, "
        "setgid)",
        f"   home           {facts.home_parent}/<your UID>, at {facts.home_mount} in your pods (mode 0700; your "
        "UID is allocated on your first submission)",
        f"   S3             s3://<{'DataBucketName' if facts.in_own_account else 'DataBucket'}>/{facts.s3_prefix}",
    ]
    if facts.studio_domain is not None:
        lines += [
            "",
            "5. Studio",
            f"   domain         {facts.studio_domain} (open it from the AWS access portal)",
        ]
    studio = {
        k: t for k, t in outputs.items() if facts.studio_domain is not None or not k.startswith("Studio")
    }
    shown = (
        # the team's account stack, and its Studio stack there (the Identity Center role's ARN is not readable)
        {**onboarding.ACCOUNT_STACK_OUTPUTS, **{k: t for k, t in studio.items() if k.startswith("Studio")}}
        if facts.in_own_account
        else studio
    )
    stacks = " and ".join(dict.fromkeys(facts.output_stack(key) for key in shown))
    lines += ["", f"Known once deployed: outputs of stack {stacks} (your profile may read them)"]
    for key, text in shown.items():
        lines += [f"   {key}: {text}", f"     {onboarding.describe_output_command(facts, key)}"]
    lines.append("and of the cluster stack, shared by every team (ask the platform team, who may read it):")
    for key, (_, _, text) in onboarding.CLUSTER_RESOURCES.items():
        if facts.in_own_account and key == "DataBucket":
            continue  # the team's data is in its own bucket
        lines += [f"   {key}: {text}", f"     {onboarding.cluster_resource_command(platform, key)}"]
    return lines


def _kubeconfig_lines(facts: OnboardingFacts) -> list[str]:
    """Return the kubeconfig commands: ``update-kubeconfig``, or by hand where the profile cannot describe the cluster."""
    from hyperpod_tenancy.k8s import onboarding  # noqa: PLC0415 - see the tools package

    if not facts.in_own_account:
        return [
            f"   aws eks update-kubeconfig --name {facts.cluster} --region {facts.region} --profile {facts.profile} "
            f"--alias {facts.kube_context}"
        ]
    # eks:DescribeCluster is answered in the caller's account, so a team account's profile cannot describe the
    # cluster; the token (aws eks get-token) is signed by the caller and accepted across accounts
    return [
        f"   The cluster is in account {facts.cluster_account}, which your profile cannot describe: the platform "
        "team gives you its endpoint and certificate authority",
        f"     (aws eks describe-cluster --name {facts.cluster} --region {facts.region} "
        '--query "cluster.[endpoint,certificateAuthority.data]" --output text), then:',
        *(f"   {command}" for command in onboarding.kubeconfig_commands(facts)),
    ]


def _declaration() -> str:
    from hyperpod_tenancy.k8s import labels  # noqa: PLC0415 - see the tools package

    return (
        f"container variables {labels.CHECKPOINT_DIR_ENV} and {labels.CHECKPOINT_INTERVAL_ENV} below the "
        "container's mount of the team FSx claim (kubectl and hyp alike)"
    )


def _offboard(
    platform: Platform, facts: OnboardingFacts, args: argparse.Namespace, *, out: TextIO, err: TextIO
) -> int:
    from hyperpod_tenancy.k8s import onboarding  # noqa: PLC0415 - see the tools package
    from hyperpod_tenancy.policy.model import WorkloadKind  # noqa: PLC0415 - see the tools package

    person: str = args.offboard
    if args.archive_job:
        if args.uid < platform.cluster.posix_identity.uid_range.first:
            print(
                f"{PROG}: error: --uid {args.uid} is below the platform's uidRange "
                f"({platform.cluster.posix_identity.uid_range.first}-); it is no person's UID.",
                file=err,
            )
            return 2
        print(json.dumps(onboarding.archive_job(facts, args.uid), indent=2), file=out)
        return 0
    team = platform.team(facts.team)
    steps = onboarding.offboarding_steps(
        facts,
        person,
        inference=team.workload is WorkloadKind.INFERENCE,
        cluster_stack=onboarding.cluster_stack_name(platform),
        instance_arn=platform.identity_center.instance_arn,
        group_id=team.identity.group_id,
    )
    print(
        f"Offboarding {person} (webhook person sso:{person}) from team {facts.team} on {facts.cluster}. "
        "Nothing below has been run: each step names who runs it.",
        file=out,
    )
    for title, commands in steps:
        print(f"\n{title}", file=out)
        for command in commands:
            print(f"  {command}", file=out)
    return 0


def _yaml(obj: Any) -> str:
    import yaml  # noqa: PLC0415 - see the tools package

    return str(yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, width=120))


def _context_start_url(path: Path, key: str) -> str | None:
    """Return the access portal URL of ``cdk.json`` beside the policy file, if it names one."""
    try:
        context = json.loads((path.resolve().parent / "cdk.json").read_text(encoding="utf-8")).get(
            "context", {}
        )
    except (OSError, ValueError, AttributeError):
        return None
    value = context.get(key) if isinstance(context, dict) else None
    return value if isinstance(value, str) and value else None


def _load(path: Path, err: TextIO) -> Platform | None:
    from hyperpod_tenancy.errors import PolicyError  # noqa: PLC0415 - see the tools package
    from hyperpod_tenancy.policy.loader import load_platform  # noqa: PLC0415 - see the tools package

    try:
        return load_platform(path)
    except PolicyError as exc:
        print(str(exc), file=err)
    except OSError as exc:
        print(f"{PROG}: error: cannot read policy {str(path)!r}: {exc.strerror or exc}.", file=err)
    return None
