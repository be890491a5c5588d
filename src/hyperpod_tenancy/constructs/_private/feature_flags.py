"""The CDK feature flags the constructs' templates still depend on, and the warning naming them.

The constructs set explicitly what a construct-level prop can set (the VPC's default security group
restriction, the native IAM OIDC provider of the cluster), so those do not follow the app's ``cdk.json``. Three
flags act inside aws-cdk-lib where no prop reaches: an app that leaves them off synthesizes a different template,
and is told so at synth, once per cluster, naming them.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from constructs import IConstruct

from hyperpod_tenancy.constructs._private.annotations import warn

__all__ = ["TEMPLATE_FLAGS", "warn_flags_off"]

#: Flags (all ``true`` in the library's tests) that change the constructs' templates and no prop can set, with
#: what an app without them gets.
TEMPLATE_FLAGS: Final[dict[str, str]] = {
    "@aws-cdk/aws-lambda:useCdkManagedLogGroup": (
        "the Lambda functions CDK provides (kubectl provider, bucket deployment, custom resource frameworks) get no "
        "AWS::Logs::LogGroup of their own; Lambda creates one on first run, kept forever"
    ),
    "@aws-cdk/aws-iam:minimizePolicies": "IAM policies keep one statement per grant instead of merged ones",
    "@aws-cdk/core:enablePartitionLiterals": "ARNs carry {Ref: AWS::Partition} instead of the partition's literal",
}


def warn_flags_off(scope: IConstruct) -> list[str]:
    """Warn (``HPT-FEATURE-FLAGS``) when the app's context leaves a flag of :data:`TEMPLATE_FLAGS` off; the flags."""
    flags = cdk.FeatureFlags.of(scope)
    off = [flag for flag in TEMPLATE_FLAGS if not flags.is_enabled(flag)]
    if off:
        effects = "; ".join(f"{flag}: {TEMPLATE_FLAGS[flag]}" for flag in off)
        warn(
            scope,
            "HPT-FEATURE-FLAGS",
            f"the app's CDK context leaves {', '.join(off)} off, so the platform's templates differ from the ones "
            f"this library is tested with ({effects}). Set each to true under 'context' in your cdk.json.",
        )
    return off
