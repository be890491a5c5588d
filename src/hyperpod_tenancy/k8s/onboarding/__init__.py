"""What a team member needs to start: one pure function of the policy, read by the CLI and the team stack alike.

:func:`onboarding_facts` gathers, for one team of a platform, everything ``hyperpod-tenancy onboarding`` prints
and every team stack outputs (:func:`stack_outputs`): the Identity Center profile (``aws sso login``), the
cluster and how to reach its private API endpoint, the namespace, LocalQueue, the priority classes the team may
use with their checkpoint rules, the FSx directory and home directory, the S3 prefix and the Studio domain.
The samples a member submits are rendered here too: a ``kubectl`` Job (:func:`kubectl_job`) and a
``hyp create hyp-pytorch-job`` line (:func:`hyp_command`), with the labels, checkpoint declaration and FSx volume
the admission policies require; :func:`offboarding_steps` gives the commands that stop a person's work, keep
their UID record and archive their home directory.

The checkpoint rule here (:func:`checkpoint_reasons`) restates in Python what the checkpoint policy's CEL decides
(:mod:`hyperpod_tenancy.k8s.admission`, ``_needs_checkpoint``): a test holds the two to the same answer on the
synthesized policies.

Values that exist only once the stacks are deployed are read with a command: the team stack's own (the Studio
domain's ID and URL, the team's Identity Center role) are its outputs (:data:`DEPLOY_TIME_OUTPUTS`,
:func:`describe_output_command`); the shared ones (the data bucket, the FSx file system) are resources of the
cluster stack (:data:`CLUSTER_RESOURCES`, :func:`cluster_resource_command`), which no team stack re-exports.
"""

from __future__ import annotations

from hyperpod_tenancy.k8s.onboarding.facts import (
    ACCOUNT_STACK_OUTPUTS,
    CLUSTER_RESOURCES,
    CLUSTER_STACK_ID,
    DEPLOY_TIME_OUTPUTS,
    SAMPLE_IMAGE,
    SAMPLE_JOB_NAME,
    SSO_START_URL_CONTEXT,
    ClassRule,
    OnboardingFacts,
    UnknownTeamError,
    checkpoint_reasons,
    cluster_stack_name,
    onboarding_facts,
    team_stack_name,
)
from hyperpod_tenancy.k8s.onboarding.offboarding import archive_job, offboarding_steps
from hyperpod_tenancy.k8s.onboarding.outputs import (
    CA_PLACEHOLDER,
    ENDPOINT_PLACEHOLDER,
    LIFECYCLE_APP_TYPES,
    StackOutput,
    cluster_resource_command,
    describe_output_command,
    kubeconfig_commands,
    lifecycle_config_name,
    lifecycle_environment,
    stack_outputs,
)
from hyperpod_tenancy.k8s.onboarding.samples import hyp_command, hyp_script, kubectl_job

__all__ = [
    "ACCOUNT_STACK_OUTPUTS",
    "CA_PLACEHOLDER",
    "CLUSTER_RESOURCES",
    "CLUSTER_STACK_ID",
    "DEPLOY_TIME_OUTPUTS",
    "ENDPOINT_PLACEHOLDER",
    "LIFECYCLE_APP_TYPES",
    "SAMPLE_IMAGE",
    "SAMPLE_JOB_NAME",
    "SSO_START_URL_CONTEXT",
    "ClassRule",
    "OnboardingFacts",
    "StackOutput",
    "UnknownTeamError",
    "archive_job",
    "checkpoint_reasons",
    "cluster_resource_command",
    "cluster_stack_name",
    "describe_output_command",
    "hyp_command",
    "hyp_script",
    "kubeconfig_commands",
    "kubectl_job",
    "lifecycle_config_name",
    "lifecycle_environment",
    "offboarding_steps",
    "onboarding_facts",
    "stack_outputs",
    "team_stack_name",
]
