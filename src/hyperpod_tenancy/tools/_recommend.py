"""Quotas from history: what ``recommend-quotas`` reads, how it proposes, and how it edits ``platform.yaml``.

What the data records (collector schema v1, :mod:`hyperpod_tenancy.chargeback.queries`):

* ``clusterqueue`` snapshots carry, per ClusterQueue and instance type, only what the admitted workloads hold
  (``gpu_total``) and the part over the nominal quota (``gpu_borrowed``). They carry **no pending demand**:
  nothing about the workloads Kueue has not admitted. The chargeback's ``hourly_usage`` query turns them into
  GPU-milliseconds per team, type and hour (:class:`~hyperpod_tenancy.chargeback.model.HourlyUsage`), read here
  with the offline chargeback (:func:`hyperpod_tenancy.chargeback_offline.run_queries`).
* The closest recorded signal of waiting demand is the same operator's ``workload`` table (``raw/workload/``,
  catalogued by the pipeline, not read by the chargeback): one row per Workload state change, with ``gpu``,
  ``instance_type``, ``admitted`` and ``finished``. A Workload whose latest row is neither admitted nor finished
  is waiting; its GPUs count as waiting demand until its next row (or the end of the month). Without a
  ``workload/`` folder the only signal left is the hours a team spent at its ceiling (used ≥ guarantee +
  borrowing limit): the command says so and counts no waiting demand.

The proposal, per team and instance type with GPUs, in GPUs per hour of the month (an hour without usage is 0):

* guarantee = ``ceil(p95(own + waiting) / GPUs per instance)`` instances, ``own`` = used - borrowed: a team
  capped at its ceiling with a queue grows by its queue, one that never fills its guarantee shrinks to what it
  holds 95 % of the time;
* borrow limit = ``ceil(100 x p95(used + waiting - new guarantee, ≥ 0) / new guarantee)`` percent, the most
  over the team's types, within 1-500 (the service's range); unchanged for a team that does not borrow, is
  guaranteed nothing, or never needed more than its new guarantee in the month (no evidence for a change: a
  borrow limit costs nothing until it is used);
* where the guarantees of a type exceed its promisable instances (``count - reserved``), every team's is scaled
  down pro rata (largest remainder), and the notes say so.

Percentiles are nearest-rank: ``p`` of ``n`` sorted values is the ``ceil(p x n / 100)``-th.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from hyperpod_tenancy.chargeback.model import MS_PER_HOUR
from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform

__all__ = [
    "BillImpact",
    "History",
    "Proposal",
    "Reason",
    "RecommendError",
    "apply_to_yaml",
    "bill_impact",
    "load_text",
    "percentile",
    "read_history",
    "recommend",
]

#: The percentile a guarantee and a borrow limit are sized to.
PERCENTILE = 95
#: The service's range of ``borrowLimit`` (percent of the guarantee).
BORROW_LIMIT_RANGE = (1, 500)
#: A team is at its ceiling in an hour when it used at least this close to it (GPUs, hour averages).
CEILING_EPSILON = 0.5
_PREFIX = names.NAMESPACE_PREFIX


class RecommendError(ValueError):
    """The usage cannot be read, holds nothing of the month, or the proposal does not validate; one line."""


@dataclass(frozen=True, kw_only=True)
class Series:
    """One team's hourly GPUs on one instance type, every hour of the month in order."""

    used: tuple[float, ...]
    borrowed: tuple[float, ...]
    waiting: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class History:
    """A month of usage per (team, instance type), with what was recorded about waiting demand."""

    month: str
    hours: int
    series: Mapping[tuple[str, str], Series]
    #: Whether the ``workload`` table was read (False: no waiting demand is known).
    waiting_recorded: bool
    #: One sentence on where the waiting demand came from, for the output.
    pending_note: str


@dataclass(frozen=True, kw_only=True)
class Reason:
    """The figures one team's proposal on one instance type rests on (GPUs per hour)."""

    team: str
    instance_type: str
    p50_used: float
    p95_used: float
    p95_own_and_waiting: float
    p95_borrowed_above: float
    hours_at_ceiling: int
    waiting_gpu_hours: float
    current_instances: int
    proposed_instances: int
    current_borrow_limit: int
    proposed_borrow_limit: int


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """The proposed quotas and borrow limits, and why."""

    #: Team → instance type → proposed instances (every quota of every hosted team).
    quotas: Mapping[str, Mapping[str, int]]
    #: Team → proposed borrow limit (percent).
    borrow_limits: Mapping[str, int]
    reasons: tuple[Reason, ...]
    #: Scaling and other remarks, one sentence each.
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class BillImpact:
    """Each team's monthly bill under the billing rule, current and proposed policy (the plan's cost)."""

    #: What the bill is (month, rule), or why there is none.
    description: str
    #: Row owner → (current, proposed) USD; empty when there is no bill.
    teams: Mapping[str, tuple[Decimal, Decimal]]
    #: Why there is no bill (the plan's cost note), else None.
    note: str | None = None


def percentile(values: Sequence[float], p: int = PERCENTILE) -> float:
    """Nearest-rank percentile: the ``ceil(p x n / 100)``-th smallest of ``values`` (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered) / 100), 1) - 1]


# ------------------------------------------------------------------------------------------------- reading


def _gpus_per_instance(platform: Platform) -> dict[str, int]:
    from hyperpod_tenancy.tools.tenancy_plan import gpus_per_instance  # noqa: PLC0415

    return gpus_per_instance(platform)


def read_history(platform: Platform, *, usage: Path, month: str) -> History:
    """Read a month of hourly usage (the chargeback's SQL) and of waiting demand (``workload/``) from ``usage``.

    Raises:
        RecommendError: the folder cannot be read, or it holds no usage of the month.

    """
    from hyperpod_tenancy import chargeback_offline  # noqa: PLC0415
    from hyperpod_tenancy.chargeback import engine, queries  # noqa: PLC0415

    if not usage.is_dir():
        raise RecommendError(
            f"--usage {str(usage)!r}: not a folder; pass the folder holding clusterqueue/ and node/"
        )
    gpus = _gpus_per_instance(platform)
    try:
        inputs, _ = chargeback_offline.run_queries(
            usage=usage, month=month, cluster=platform.cluster.name, gpus_per_instance=gpus, progress=False
        )
        waiting = _waiting(usage, month=month, cluster=platform.cluster.name)
    except (chargeback_offline.OfflineInputError, queries.QueryInputError) as exc:
        raise RecommendError(str(exc)) from exc
    if not inputs.usage:
        raise RecommendError(
            f"--usage {str(usage)!r}: no ClusterQueue usage of cluster {platform.cluster.name!r} in {month}; "
            "pick a month the folder holds with --month YYYY-MM"
        )
    start, end = engine.month_bounds(month)
    hours = int((end - start).total_seconds()) // 3600
    used: dict[tuple[str, str], list[float]] = {}
    borrowed: dict[tuple[str, str], list[float]] = {}
    for row in inputs.usage:
        key = (row.team, row.instance_type)
        index = int((row.hour - start).total_seconds()) // 3600
        used.setdefault(key, [0.0] * hours)[index] += row.gpu_ms / MS_PER_HOUR
        borrowed.setdefault(key, [0.0] * hours)[index] += row.borrowed_gpu_ms / MS_PER_HOUR
    pending: dict[tuple[str, str], list[float]] = {}
    unattributed = 0.0
    quota_types = {t.name: [i for i in t.compute.quotas if gpus.get(i)] for t in platform.hosted_teams}
    for (team, recorded), hourly in (waiting or {}).items():
        itype = recorded
        # a waiting workload Kueue has not assigned a flavor: the team's only type, if it has one
        if not itype:
            types = quota_types.get(team, [])
            if len(types) != 1:
                unattributed += sum(hourly.values()) / MS_PER_HOUR
                continue
            itype = types[0]
        series = pending.setdefault((team, itype), [0.0] * hours)
        for index, gpu_ms in hourly.items():
            if 0 <= index < hours:
                series[index] += gpu_ms / MS_PER_HOUR
    keys = sorted(set(used) | set(pending))
    zero = (0.0,) * hours
    series_of = {
        k: Series(
            used=tuple(used.get(k, zero)),
            borrowed=tuple(borrowed.get(k, zero)),
            waiting=tuple(pending.get(k, zero)),
        )
        for k in keys
    }
    if waiting is None:
        note = (
            "not recorded: the clusterqueue snapshots hold only admitted GPUs (gpu_total, gpu_borrowed), and the "
            "folder has no workload/ table (the operator's raw/workload/); only the hours at the ceiling show "
            "demand the quota capped"
        )
    else:
        note = (
            "read from workload/ (the operator's Workload snapshots): GPUs of workloads neither admitted nor "
            "finished, until their next snapshot"
        )
        if unattributed:
            note += (
                f"; {unattributed:,.1f} GPU-hours of workloads without an instance type were not attributed"
            )
    return History(
        month=month, hours=hours, series=series_of, waiting_recorded=waiting is not None, pending_note=note
    )


def _waiting(usage: Path, *, month: str, cluster: str) -> dict[tuple[str, str], dict[int, int]] | None:
    """Return (team, instance type) → hour index → GPU-ms of waiting workloads; None without ``workload/``."""
    import duckdb  # noqa: PLC0415

    from hyperpod_tenancy import chargeback_offline  # noqa: PLC0415
    from hyperpod_tenancy.chargeback import queries  # noqa: PLC0415

    start, end = queries.month_bounds(month)
    previous = start - dt.timedelta(days=1)
    found = chargeback_offline._table_files(  # the offline reader's file discovery
        usage, "workload", ((start.year, start.month), (previous.year, previous.month))
    )
    if found is None:
        return None
    reader, files = found
    source = chargeback_offline._source("workload", reader, files)
    naive_start, naive_end = start.replace(tzinfo=None), end.replace(tzinfo=None)
    sql = f"""
        WITH w AS (
          SELECT workload_name, namespace, team, COALESCE(instance_type, '') AS instance_type,
                 CAST("timestamp" AS TIMESTAMP) AS ts, TRY_CAST(resource_version AS BIGINT) AS rv,
                 CAST(gpu AS DOUBLE) AS gpus, COALESCE(admitted, false) AS admitted,
                 COALESCE(finished, false) AS finished
          FROM {source}
          WHERE cluster = ?
        ),
        s AS (
          SELECT *, LEAD(ts) OVER (PARTITION BY namespace, workload_name ORDER BY ts, rv) AS next_ts FROM w
          WHERE ts < ?
        )
        SELECT namespace, team, instance_type, ts, COALESCE(next_ts, ?) AS until, gpus
        FROM s
        WHERE (next_ts IS NULL OR next_ts > ts) AND NOT admitted AND NOT finished AND gpus > 0
          AND COALESCE(next_ts, ?) > ?
    """  # noqa: S608 - the source is the offline reader's, with quoted paths
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(sql, [cluster, naive_end, naive_end, naive_end, naive_start]).fetchall()
    except duckdb.Error as exc:
        raise RecommendError(
            f"--usage {str(usage)!r}: cannot read workload/ ({exc}); its files must have the operator's columns "
            f"({', '.join(name for name, _ in queries.COLLECTOR_COLUMNS['workload'])})"
        ) from exc
    finally:
        con.close()
    result: dict[tuple[str, str], dict[int, int]] = {}
    for namespace, team, itype, since, until, gpus in rows:
        name = namespace[len(_PREFIX) :] if str(namespace).startswith(_PREFIX) else str(team)
        begin, finish = max(since, naive_start), min(until, naive_end)
        hourly = result.setdefault((name, str(itype)), {})
        cursor = begin
        while cursor < finish:
            hour = cursor.replace(minute=0, second=0, microsecond=0)
            stop = min(finish, hour + dt.timedelta(hours=1))
            index = int((hour - naive_start).total_seconds()) // 3600
            ms = int((stop - cursor).total_seconds() * 1000)
            hourly[index] = hourly.get(index, 0) + round(gpus * ms)
            cursor = stop
    return result


# ----------------------------------------------------------------------------------------------- proposing


def recommend(platform: Platform, history: History) -> Proposal:
    """Propose every hosted team's quotas and borrow limit from ``history`` (see the module docstring)."""
    gpus = _gpus_per_instance(platform)
    from hyperpod_tenancy.tools.tenancy_plan import build_plan  # noqa: PLC0415

    ceilings = {(s.team, s.instance_type): s.burst_ceiling_gpus for s in build_plan(platform).shares}
    zero = (0.0,) * history.hours
    empty = Series(used=zero, borrowed=zero, waiting=zero)
    quotas: dict[str, dict[str, int]] = {}
    figures: dict[tuple[str, str], tuple[float, float, float, int, float]] = {}
    for team in platform.hosted_teams:
        quotas[team.name] = {}
        for itype, count in team.compute.quotas.items():
            per = gpus.get(itype, 0)
            if per == 0:  # a type without accelerators: the GPU history says nothing about it
                quotas[team.name][itype] = count
                continue
            s = history.series.get((team.name, itype), empty)
            own_and_waiting = [u - b + w for u, b, w in zip(s.used, s.borrowed, s.waiting, strict=True)]
            ceiling = ceilings.get((team.name, itype), count * per)
            at_ceiling = sum(1 for u in s.used if ceiling > 0 and u >= ceiling - CEILING_EPSILON)
            p95_need = percentile(own_and_waiting)
            quotas[team.name][itype] = math.ceil(p95_need / per - 1e-9)
            figures[(team.name, itype)] = (
                percentile(s.used, 50),
                percentile(s.used),
                p95_need,
                at_ceiling,
                sum(s.waiting),
            )
    notes = _scale(platform, quotas, gpus)
    borrow_limits: dict[str, int] = {}
    above_of: dict[tuple[str, str], float] = {}
    for team in platform.hosted_teams:
        needed: list[int] = []
        for itype in team.compute.quotas:
            per = gpus.get(itype, 0)
            if per == 0:
                continue
            s = history.series.get((team.name, itype), empty)
            guaranteed = quotas[team.name][itype] * per
            above = percentile([max(u + w - guaranteed, 0.0) for u, w in zip(s.used, s.waiting, strict=True)])
            above_of[(team.name, itype)] = above
            if guaranteed > 0:
                needed.append(math.ceil(100 * math.ceil(above - 1e-9) / guaranteed))
        current = team.compute.borrow_limit
        if platform.effective_sharing(team).borrows and needed and max(needed) == 0:
            notes.append(
                f"{team.name}: needed nothing above its proposed guarantee this month; borrowLimit kept at "
                f"{current}%."
            )
            borrow_limits[team.name] = current
        elif platform.effective_sharing(team).borrows and needed:
            low, high = BORROW_LIMIT_RANGE
            borrow_limits[team.name] = min(max(*needed, low), high)
            if max(needed) > high:
                notes.append(
                    f"{team.name}: borrowing would need {max(needed)}% of its guarantee; capped at the "
                    f"service's {high}%."
                )
        else:
            borrow_limits[team.name] = current
    reasons = tuple(
        Reason(
            team=team,
            instance_type=itype,
            p50_used=p50,
            p95_used=p95,
            p95_own_and_waiting=need,
            p95_borrowed_above=above_of[(team, itype)],
            hours_at_ceiling=capped,
            waiting_gpu_hours=waiting,
            current_instances=platform.team(team).compute.quotas[itype],
            proposed_instances=quotas[team][itype],
            current_borrow_limit=platform.team(team).compute.borrow_limit,
            proposed_borrow_limit=borrow_limits[team],
        )
        for (team, itype), (p50, p95, need, capped, waiting) in figures.items()
    )
    if not history.waiting_recorded:
        notes.append(
            "no workload/ table: waiting demand is unknown; a team at its ceiling for many hours may need more "
            "than this proposal gives it."
        )
    return Proposal(quotas=quotas, borrow_limits=borrow_limits, reasons=reasons, notes=tuple(notes))


def _scale(platform: Platform, quotas: dict[str, dict[str, int]], gpus: Mapping[str, int]) -> list[str]:
    """Scale each type's guarantees down pro rata (largest remainder) to its promisable instances."""
    notes: list[str] = []
    for itype, per in gpus.items():
        if per == 0:
            continue
        promisable = sum(g.quota_capacity for g in platform.instance_group_for(itype))
        wanted = {team: q[itype] for team, q in quotas.items() if itype in q}
        total = sum(wanted.values())
        if total <= promisable:
            continue
        exact = {team: Decimal(n) * promisable / total for team, n in wanted.items()}
        scaled = {team: int(value) for team, value in exact.items()}
        left = promisable - sum(scaled.values())
        for team in sorted(exact, key=lambda t: (-(exact[t] - scaled[t]), t))[:left]:
            scaled[team] += 1
        for team, n in scaled.items():
            quotas[team][itype] = n
        shares = ", ".join(f"{team} {wanted[team]} -> {scaled[team]}" for team in sorted(wanted))
        notes.append(
            f"{itype}: the history asks for {total} instances but {promisable} are promisable (count - reserved); "
            f"every guarantee scaled down pro rata: {shares}."
        )
    return notes


# ----------------------------------------------------------------------------------------------- the YAML


_TEAM = re.compile(r"^(?P<indent>\s*)-\s+name:\s*(?P<q>['\"]?)(?P<name>[^'\"#\s]+)(?P=q)\s*(#.*)?$")
_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][A-Za-z0-9]*):(?P<rest>.*)$")


def apply_to_yaml(text: str, proposal: Proposal) -> str:
    """Return ``text`` with the proposal's numbers under ``teams[i].compute``; every other byte is kept.

    Only the values of ``quotas`` (flow ``{type: n}`` or block mappings) and ``borrowLimit`` change; a
    ``borrowLimit`` that differs from the (default) value in force and is not written is added after
    ``quotas``. The result is parsed again and checked to hold exactly the proposal.

    Raises:
        RecommendError: the file's layout is not one these edits understand.

    """
    import yaml  # noqa: PLC0415

    lines = text.splitlines(keepends=True)
    data: Any = yaml.safe_load(text)
    teams = [t for t in data.get("teams", []) if isinstance(t, dict)]
    blocks = _team_blocks(lines)
    for team in teams:
        name = str(team.get("name"))
        if name not in proposal.quotas or name not in blocks:
            continue
        first, last = blocks[name]
        lines[first:last] = _edit_team(lines[first:last], name, team, proposal)
        blocks = _team_blocks(lines)
    result = "".join(lines)
    parsed: Any = yaml.safe_load(result)
    for team in parsed.get("teams", []):
        name = str(team.get("name"))
        if name not in proposal.quotas:
            continue
        compute = team.get("compute", {})
        quotas = {str(k): v for k, v in (compute.get("quotas") or {}).items()}
        want_limit = proposal.borrow_limits[name]
        if quotas != dict(proposal.quotas[name]) or compute.get("borrowLimit", want_limit) != want_limit:
            raise RecommendError(
                f"teams[{name}].compute: cannot edit its quotas/borrowLimit in place; write them as "
                "`quotas: {type: n}` and `borrowLimit: n` on lines of their own"
            )
    return result


def _team_blocks(lines: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Team name → the lines [first, last) of its item under the top-level ``teams:``."""
    blocks: dict[str, tuple[int, int]] = {}
    inside = False
    current: tuple[str, int, int] | None = None  # name, first line, item indent
    for i, line in enumerate(lines):
        stripped = line.rstrip("\n")
        if not inside:
            inside = stripped.startswith("teams:")
            continue
        if stripped and not stripped[0].isspace() and not stripped.startswith(("-", "#")):
            break  # the next top-level key
        match = _TEAM.match(stripped)
        if match and (current is None or len(match.group("indent")) == current[2]):
            if current is not None:
                blocks[current[0]] = (current[1], i)
            current = (match.group("name"), i, len(match.group("indent")))
    else:
        i = len(lines)
    if current is not None:
        blocks[current[0]] = (current[1], i if inside else len(lines))
    return blocks


def _edit_team(block: list[str], name: str, team: Mapping[str, Any], proposal: Proposal) -> list[str]:
    out = list(block)
    compute_at = next((i for i, line in enumerate(out) if re.match(r"^\s*compute:\s*(#.*)?$", line)), None)
    if compute_at is None:
        return out
    compute_indent = len(out[compute_at]) - len(out[compute_at].lstrip())
    end = next(
        (
            i
            for i in range(compute_at + 1, len(out))
            if out[i].strip()
            and not out[i].lstrip().startswith("#")
            and len(out[i]) - len(out[i].lstrip()) <= compute_indent
        ),
        len(out),
    )
    quotas = proposal.quotas[name]
    quotas_at: int | None = None
    limit_at: int | None = None
    for i in range(compute_at + 1, end):
        match = _KEY.match(out[i].rstrip("\n"))
        if match is None:
            continue
        if match.group("key") == "quotas":
            quotas_at = i
            out[i] = _flow_quotas(out[i], quotas)
            j = i + 1
            indent = len(match.group("indent"))
            while j < end and (not out[j].strip() or len(out[j]) - len(out[j].lstrip()) > indent):
                inner = _KEY_OR_TYPE.match(out[j].rstrip("\n"))
                if inner is not None and inner.group("key").strip("'\"") in quotas:
                    number = quotas[inner.group("key").strip("'\"")]
                    out[j] = f"{inner.group('head')}{number}{inner.group('tail')}\n"
                j += 1
        elif match.group("key") == "borrowLimit":
            limit_at = i
            value = re.sub(r"^\s*\d+", f" {proposal.borrow_limits[name]}", match.group("rest"), count=1)
            out[i] = f"{match.group('indent')}borrowLimit:{value}\n"
    compute = team.get("compute") or {}
    current_limit = compute.get("borrowLimit")
    if limit_at is None and quotas_at is not None and current_limit is None:
        from hyperpod_tenancy.policy.model import DEFAULT_BORROW_LIMIT  # noqa: PLC0415

        if proposal.borrow_limits[name] != DEFAULT_BORROW_LIMIT:
            indent = len(out[quotas_at]) - len(out[quotas_at].lstrip())
            j = quotas_at + 1
            while j < end and (not out[j].strip() or len(out[j]) - len(out[j].lstrip()) > indent):
                j += 1
            out.insert(j, f"{' ' * indent}borrowLimit: {proposal.borrow_limits[name]}\n")
    return out


_KEY_OR_TYPE = re.compile(r"^(?P<head>\s*(?P<key>['\"]?[A-Za-z0-9.\-]+['\"]?):\s*)\d+(?P<tail>.*)$")


def _flow_quotas(line: str, quotas: Mapping[str, int]) -> str:
    """Replace the numbers of a flow mapping ``quotas: {type: n, ...}`` on one line (others unchanged)."""
    head, brace, rest = line.partition("{")
    if not brace:
        return line
    body, close, tail = rest.partition("}")

    def number(match: re.Match[str]) -> str:
        key = match.group("key").strip("'\"")
        return f"{match.group('k')}{quotas[key]}" if key in quotas else match.group(0)

    body = re.sub(r"(?P<k>\s*(?P<key>['\"]?[A-Za-z0-9.\-]+['\"]?)\s*:\s*)\d+", number, body)
    return f"{head}{brace}{body}{close}{tail}"


def load_text(text: str, *, source: str) -> Platform:
    """Validate a policy's YAML text (the proposal) as ``validate`` does.

    Raises:
        RecommendError: it does not validate (every problem, on one line each).

    """
    import yaml  # noqa: PLC0415

    from hyperpod_tenancy.policy.loader import platform_from_dict  # noqa: PLC0415

    try:
        return platform_from_dict(yaml.safe_load(text), source=source)
    except PolicyError as exc:
        raise RecommendError(f"the proposed policy does not validate: {exc}") from exc


# ------------------------------------------------------------------------------------------------- the bill


def bill_impact(
    current: Platform, proposed: Platform, *, month: str, prices: Mapping[str, Decimal] | None = None
) -> BillImpact:
    """Each team's monthly bill under the billing rule for both policies: the tenancy plan's cost of each."""
    from hyperpod_tenancy.tools.tenancy_plan import build_plan  # noqa: PLC0415

    before = build_plan(current, month=month, prices=prices)
    after = build_plan(proposed, month=month, prices=prices)
    if before.cost is None or after.cost is None:
        return BillImpact(
            description=f"month {month}", teams={}, note=f"no bill: {before.cost_note or after.cost_note}"
        )
    a, b = before.cost.team_totals(), after.cost.team_totals()
    teams = {team: (a.get(team, Decimal(0)), b.get(team, Decimal(0))) for team in dict.fromkeys([*a, *b])}
    rule = before.cost.report.rule.value
    return BillImpact(
        description=f"month {month}, rule `{rule}`, each team running its guarantee all month as `plan` prices it",
        teams=teams,
    )
