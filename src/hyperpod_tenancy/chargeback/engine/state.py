"""What one run of the engine knows: the configuration, the month, the term, the inputs, the checks of each record."""

from __future__ import annotations

import datetime as dt

from hyperpod_tenancy.chargeback.engine._common import (
    ChargebackInputError,
)
from hyperpod_tenancy.chargeback.engine.arithmetic import (
    _period_text,
)
from hyperpod_tenancy.chargeback.model import (
    BillingTerm,
    ChargebackConfig,
    CostInputs,
    TeamConfig,
    TeamPeriod,
    UnknownTeams,
    UsageInputs,
)


class _State:
    """The state of one run of :func:`compute_report` (exact arithmetic in :data:`_CONTEXT`)."""

    def __init__(
        self,
        *,
        config: ChargebackConfig,
        month: str,
        start: dt.datetime,
        end: dt.datetime,
        term: BillingTerm,
        usage: UsageInputs,
        costs: CostInputs,
    ) -> None:
        self.config, self.month, self.start, self.end, self.term = config, month, start, end, term
        self.inputs, self.costs = usage, costs
        self.teams: dict[str, TeamConfig] = {t.name: t for t in config.teams}
        self.notes: list[str] = []
        self.unknown: list[str] = []
        #: Team → the hours ``[start, end)`` its quota exists this month (clipped to the month).
        self.periods: dict[str, tuple[dt.datetime, dt.datetime]] = {
            p.team: (max(p.start, start), min(p.end, end)) for p in usage.team_periods or ()
        }

    # --- validation ---------------------------------------------------------------------------------------

    def _check_record(self, what: str, cluster: str, hour: dt.datetime, *, on_the_hour: bool = True) -> None:
        """Check a record's cluster and time (``what`` names the record in the error)."""
        if cluster != self.config.cluster:
            raise ChargebackInputError(
                f"{what} is for cluster {cluster!r}, not {self.config.cluster!r}; pass only this cluster's records."
            )
        if hour.tzinfo is None or hour.utcoffset() != dt.timedelta(0):
            raise ChargebackInputError(
                f"{what}: time {hour.isoformat()} is not timezone-aware UTC; pass UTC times."
            )
        if on_the_hour and (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
            raise ChargebackInputError(f"{what}: hour {hour.isoformat()} is not the top of an hour.")
        if not self.start <= hour < self.end:
            raise ChargebackInputError(
                f"{what}: {hour.isoformat()} is outside {self.month}; pass only the month's records."
            )

    def _team(self, name: str) -> TeamConfig:
        team = self.teams.get(name)
        if team is None:
            team = TeamConfig(name=name, cost_center=name, quotas={})
            self.teams[name] = team
            self.unknown.append(name)
            fix = (
                "add it to the configuration's teams (its TeamTenant), or bill such namespaces under their own "
                "name with `chargeback.unknownTeams: bill`"
                if self.config.unknown_teams is UnknownTeams.FAIL
                else "allowed by `chargeback.unknownTeams: bill`"
            )
            self.notes.append(
                f"team {name!r} has usage, evictions or tagged bill lines but is not in the policy: billed without "
                f"a guarantee, under its own name as cost center; {fix}."
            )
        return team

    def _period(self, name: str) -> tuple[dt.datetime, dt.datetime] | None:
        """Return the hours ``[start, end)`` a team's guarantee is billed, or ``None`` for the whole month."""
        period = self.periods.get(name)
        if self.inputs.team_periods is None or period == (self.start, self.end):
            return None
        return period if period is not None else (self.start, self.start)

    def _billed_periods(self) -> tuple[TeamPeriod, ...]:
        """Return the teams with a guarantee whose quota did not exist all month, with their hours (and note them)."""
        if self.inputs.team_periods is None:
            return ()
        out = []
        for team in sorted(self.config.teams, key=lambda t: t.name):
            if not any(team.quotas.values()):
                continue
            start, end = self.periods.get(team.name, (self.start, self.start))
            if (start, end) != (self.start, self.end):
                out.append(TeamPeriod(team=team.name, start=start, end=end))
                self.notes.append(
                    f"team {team.name!r}: its quota existed {_period_text(start, end)} of {self.month} (its queue's "
                    "snapshots); its guarantee is billed for those hours only, the rest of its capacity is the "
                    "idle owner's."
                )
        return tuple(out)

    def _gpus(self, instance_type: str) -> int:
        gpus = self.config.gpus_per_instance.get(instance_type)
        if not gpus or gpus <= 0:
            raise ChargebackInputError(
                f"GPUs per instance of {instance_type} are unknown; set `resources.accelerators` on its instance "
                "group (or use a catalogued instance type)."
            )
        return gpus
