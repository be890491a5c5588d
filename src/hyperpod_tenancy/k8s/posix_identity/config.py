"""The webhook's configuration file and each team's record, rendered from the policy."""

from __future__ import annotations

import json
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, workloads
from hyperpod_tenancy.k8s.posix_identity._common import CONFIG_VERSION, SSO_ROLE_PREFIX
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.records.posix_identity import PosixTeamRecord

__all__ = ["team_record", "team_records_path", "webhook_config"]


def webhook_config(platform: Platform) -> dict[str, Any]:
    """Return the server's configuration file (``--teams``): UIDs, exemptions, home claim, team records' path.

    Rendered from the policy only (no CDK tokens), so it can live in the cluster stack and be hashed. It lists no
    team: each team stack writes its own record (:func:`team_record`) under
    ``names.team_records_path(<cluster>, "posix-identity")``, which the server reads at run time, so adding a team
    changes neither this file nor the Deployment. ``exemptUsernames`` are the controllers of
    :data:`hyperpod_tenancy.k8s.workloads.CONTROLLERS`.
    """
    spec = platform.cluster.posix_identity
    break_glass = {} if spec.break_glass_group is None else {"breakGlassGroups": [spec.break_glass_group]}
    return {
        **break_glass,
        "version": CONFIG_VERSION,
        "uidRange": {"first": spec.uid_range.first, "last": spec.uid_range.last},
        "cacheTtlSeconds": spec.cache_ttl_seconds,
        "exemptUsernames": list(workloads.controller_usernames()),
        "home": {"mountPath": fsx_dirs.HOME_MOUNT_PATH, "claimName": FSX_CLAIM_NAME},
        "teamRecords": {"ssmPath": team_records_path(platform)},
        "supplementalGroupsPolicy": spec.supplemental_groups_policy.value,
    }


def team_records_path(platform: Platform) -> str:
    """SSM path of the webhook's team records: ``/hyperpod-tenancy/<cluster>/posix-identity/``."""
    return names.team_records_path(platform.cluster.name, "posix-identity")


def team_record(platform: Platform, team: str) -> PosixTeamRecord:
    """Return a team's record for the webhook (its team stack writes it to ``names.posix_identity_record``).

    The team's namespace, GID, LocalQueue and principal: the Identity Center role of its permission set,
    ``AWSReservedSSO_<PermissionSet>_``. The Studio execution role is not listed: a request from one is denied as
    from an unknown role (a Studio session does not name the person, see ``hyperpod_tenancy.webhook.identity``).
    Read back by ``hyperpod_tenancy.webhook.config.parse_team_record``.
    """
    t = platform.team(team)
    return PosixTeamRecord(
        namespace=names.namespace(t.name),
        team=t.name,
        gid=t.identity.posix_gid,
        local_queue=names.local_queue(t.name),
        role_name_prefix=f"{SSO_ROLE_PREFIX}{t.permission_set}_",
    )


def _config_json(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, sort_keys=True)
