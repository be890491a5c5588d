"""Which teams' stacks a synthesis builds: every hosted team, or the ones named (``cdk synth -c teams=a,b``).

The shared stacks do not depend on the teams built beside them, so a pipeline that deploys one team's stack can
synthesize that team alone. A selection is checked before anything is built: every name must be a team hosted on
the cluster, and at least one team must be named.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy.model import Platform, Team

__all__ = ["SELECTION_CODE", "select_teams"]

#: Code of every problem with a team selection.
SELECTION_CODE = "HPT-TEAM-SELECTION"

_SOURCE = "the team selection (cdk -c teams=...)"
_LISTED = 5


def _choices(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown if len(names) <= _LISTED else f"{shown} and {len(names) - _LISTED} more"


def select_teams(platform: Platform, teams: Sequence[str] | str) -> tuple[Team, ...]:
    """Return the hosted teams named in ``teams``, in the policy's order.

    Args:
        platform: the validated policy.
        teams: team names, or one string of names separated by commas (the form of ``-c teams=a,b``); blanks
            and repeats are ignored.

    Raises:
        PolicyError: no team named, or a name that is not a team hosted on the cluster (a team flagged for a
            dedicated cluster has no stack here). Every bad name is listed at once.

    """
    wanted = [str(name).strip() for name in (teams.split(",") if isinstance(teams, str) else teams)]
    wanted = [name for name in wanted if name]
    hosted = [team.name for team in platform.hosted_teams]
    dedicated = {team.name for team in platform.dedicated_cluster_teams}
    issues: list[PolicyIssue] = []
    if not wanted:
        issues.append(
            PolicyIssue(
                "teams",
                "names no team.",
                "name at least one team (the shared stacks export what teams import only beside a team), "
                "or leave the selection out to build every team.",
                SELECTION_CODE,
            )
        )
    for name in dict.fromkeys(wanted):
        if name in hosted:
            continue
        if name in dedicated:
            message = f"{name!r} is flagged for a dedicated cluster and has no stack on this one."
            fix = "leave it out of the selection."
        else:
            message = f"{name!r} is not a team of platform {platform.name!r}."
            close = difflib.get_close_matches(name, hosted, n=1)
            fix = f"did you mean {close[0]!r}?" if close else f"choose from: {_choices(hosted)}."
        issues.append(PolicyIssue("teams", message, fix, SELECTION_CODE))
    if issues:
        raise PolicyError(issues, source=_SOURCE)
    chosen = set(wanted)
    return tuple(team for team in platform.hosted_teams if team.name in chosen)
