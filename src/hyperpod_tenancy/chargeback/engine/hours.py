"""The month hour by hour: the node inventory's capacity and each team's usage, guarantee, borrowing and lending."""

from __future__ import annotations

import datetime as dt
import itertools
import operator
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NoReturn

from hyperpod_tenancy.chargeback.engine._common import (
    ChargebackInputError,
)
from hyperpod_tenancy.chargeback.engine.accumulators import (
    _FINE,
    _PICO,
    _from_pico,
    _ms_to_pico,
    _PicoTypeAcc,
    _TypeAcc,
)
from hyperpod_tenancy.chargeback.engine.arithmetic import (
    _BORROWED_MS,
    _CLUSTER,
    _GPU_MS,
    _TEAM,
    _USAGE_KEY,
    _in_period,
    _is_int,
    _scatter,
    _what_usage,
)
from hyperpod_tenancy.chargeback.engine.state import _State
from hyperpod_tenancy.chargeback.model import (
    SLICES_PER_GPU,
    HourlyUsage,
    HourlyUsageBlock,
    UsageRecords,
    gpu_hours,
)


class _Hours(_State):
    """Capacity and usage of every hour of the month, per instance type and team."""

    def _capacity(self) -> dict[tuple[str, dt.datetime], tuple[int, int]]:
        """Check the node inventory; return ``(capacity, unavailable)`` in picohours per instance type and hour."""
        capacity: dict[tuple[str, dt.datetime], tuple[int, int]] = {}
        for cap in self.inputs.capacity:
            what = f"capacity of {cap.instance_type} at {cap.hour.isoformat()}"
            self._check_record(what, cap.cluster, cap.hour)
            total, unavailable = cap.gpu_ms, cap.unavailable_gpu_ms
            if not (_is_int(total) and _is_int(unavailable) and 0 <= unavailable <= total):
                raise ChargebackInputError(
                    f"{what}: {total!r} GPU-ms with {unavailable!r} unavailable; capacity must be a whole number "
                    "of GPU-milliseconds >= 0 and the unavailable part between 0 and the capacity."
                )
            key = (cap.instance_type, cap.hour)
            if key in capacity:
                raise ChargebackInputError(
                    f"{what} appears twice; pass one record per instance type and hour."
                )
            pico_total, pico_unavailable = _ms_to_pico([total, unavailable])
            capacity[key] = (pico_total, pico_unavailable)
        return capacity

    def _usage(
        self, capacity: dict[tuple[str, dt.datetime], tuple[int, int]]
    ) -> dict[tuple[str, dt.datetime], _Block]:
        """Group the usage by instance type and hour; each must fall in an hour of the node inventory.

        The hot loop of a month's ~10^5-10^6 records: records are taken a run of one key at a time (the SQL's
        order: by hour and type; any order gives the same groups), blocks (:class:`UsageRecords`) as they are. The
        values are checked an hour at a time (:meth:`_hour_usage`).
        """
        usage = self.inputs.usage
        runs: Iterable[tuple[tuple[str, dt.datetime], list[HourlyUsage] | HourlyUsageBlock]]
        if isinstance(usage, UsageRecords):
            runs = (((b.instance_type, b.hour), b) for b in usage.blocks)
        else:
            runs = ((key, list(run)) for key, run in itertools.groupby(usage, key=_USAGE_KEY))
        used: dict[tuple[str, dt.datetime], _Block] = {}
        for key, run in runs:
            block = _block(run, self.config.cluster)
            if block is None:
                self._reject(_records(run))
            found = used.get(key)
            if found is not None:
                found.extend(block)
            elif key in capacity:
                used[key] = block
            else:
                u = _records(run)[0]
                self._check_record(_what_usage(u), u.cluster, u.hour)
                raise ChargebackInputError(
                    f"{_what_usage(u)} has no capacity record for that hour; the node inventory must cover "
                    "every hour with usage (check the collector's node snapshots)."
                )
        return used

    def _hour_usage(self, block: _Block, acc: _PicoTypeAcc) -> tuple[list[int], list[int]]:
        """Check one hour's usage; return each team's use and borrowing (picohours, slots of ``acc``).

        Column at a time, the hot path of a month's ~10^5-10^6 records. Usage that lists every team in slot order
        (the SQL's order, when each team holds a guarantee) is read as it comes.
        """
        teams, use, borrowed = block.teams, block.use, block.borrowed
        if (
            set(map(type, use)) | set(map(type, borrowed)) != {int}
            or min(borrowed) < 0
            or min(map(operator.sub, use, borrowed)) < 0
        ):
            self._reject(block.records())
        if teams != acc.names:
            slots = list(map(acc.index.__getitem__, teams))
            if len(set(slots)) != len(slots):
                self._reject(block.records())  # a team twice
            k = len(acc.names)
            use, borrowed = _scatter(slots, use, k), _scatter(slots, borrowed, k)
        return _ms_to_pico(use), _ms_to_pico(borrowed)

    def _reject(self, records: Sequence[HourlyUsage]) -> NoReturn:
        """Raise the error of the first malformed record of an hour (the check that found one said no more)."""
        seen: set[str] = set()
        for u in records:
            self._check_record(_what_usage(u), u.cluster, u.hour)
            g, b = u.gpu_ms, u.borrowed_gpu_ms
            if not (_is_int(g) and _is_int(b) and 0 <= b <= g):
                raise ChargebackInputError(
                    f"{_what_usage(u)}: {g!r} GPU-ms with {b!r} borrowed; both must be whole numbers of "
                    "GPU-milliseconds >= 0 and the borrowed part at most the total."
                )
            if u.team in seen:
                raise ChargebackInputError(
                    f"{_what_usage(u)} appears twice; pass one record per team, type and hour."
                )
            seen.add(u.team)
        raise AssertionError("_reject found no malformed record")  # pragma: no cover - called only on one

    def _hours(self) -> dict[str, _TypeAcc]:
        """Apply the per-hour rules; return the month sums per instance type."""
        capacity = self._capacity()
        used = self._usage(capacity)
        by_type: dict[str, list[tuple[dt.datetime, int, int]]] = defaultdict(list)
        for (itype, hour), (cap_gpu, unavailable) in sorted(capacity.items()):
            by_type[itype].append((hour, cap_gpu, unavailable))
        types: dict[str, _PicoTypeAcc] = {}
        for itype, hours in by_type.items():
            gpus = self._gpus(itype)
            nominal = [
                (t.name, int(t.quotas[itype] * gpus * _PICO))
                for t in sorted(self.teams.values(), key=lambda t: t.name)
                if t.quotas.get(itype, 0) > 0
            ]
            # policy teams in name order, then the others: input order never matters
            names = [name for name, _ in nominal]
            held = set(names)
            extra = sorted(
                {team for hour, _, _ in hours if (block := used.get((itype, hour))) for team in block.teams}
                - held
            )
            for name in extra:
                self._team(name)  # a team with usage but not in the policy: noted once
            nominal_values = [n for _, n in nominal] + [0] * len(extra)
            acc = types[itype] = _PicoTypeAcc.for_teams(names + extra, nominal_values)
            periods = [self._period(name) for name in names] + [None] * len(extra)
            partial = any(p is not None for p in periods)
            for hour, cap_gpu, unavailable in hours:
                block = used.get((itype, hour))
                self._hour(
                    itype=itype,
                    hour=hour,
                    acc=acc,
                    nominal=_in_period(nominal_values, periods, hour) if partial else nominal_values,
                    cap_gpu=cap_gpu,
                    unavailable=unavailable,
                    use=self._hour_usage(block, acc) if block else None,
                )
        for itype, acc in sorted(types.items()):
            if acc.scaled_hours:
                self.notes.append(
                    f"{itype}: in {acc.scaled_hours} hour(s) the schedulable capacity was below the guarantees "
                    "(more nodes unavailable than reserved); those hours' guarantees were scaled down so the "
                    "unavailable capacity stays the idle owner's."
                )
        self._partition_notes()
        reclassified = sum(acc.reclassified for acc in types.values())
        if reclassified:
            self.notes.append(
                f"{reclassified} team-hour(s) used more than the guarantee without recording it as borrowed; the "
                "excess was counted as borrowed (Kueue's definition)."
            )
        return {itype: acc.gpu_hours() for itype, acc in types.items()}

    def _partition_notes(self) -> None:
        """Say, per partitioned instance type, how partitions are billed and what its layout strands."""
        for itype, in_partitions in sorted(self.config.partitioned_slices.items()):
            stranded = SLICES_PER_GPU - in_partitions
            note = (
                f"{itype}: GPUs partitioned (MIG); a partition's GPU-hours are its compute slices / "
                f"{SLICES_PER_GPU} of a GPU's"
            )
            if stranded > 0:
                capacity = sum(c.gpu_ms for c in self.inputs.capacity if c.instance_type == itype)
                hours = gpu_hours(capacity * stranded // SLICES_PER_GPU)
                note += (
                    f"; its layout leaves {stranded} of each GPU's {SLICES_PER_GPU} slices in no partition: "
                    f"{hours.quantize(Decimal('0.01')):f} GPU-hours no team could hold, the idle owner's"
                )
            self.notes.append(note + ".")

    @staticmethod
    def _hour(
        *,
        itype: str,
        hour: dt.datetime,
        acc: _PicoTypeAcc,
        nominal: list[int],
        cap_gpu: int,
        unavailable: int,
        use: tuple[list[int], list[int]] | None,
    ) -> None:
        """Add one hour of one instance type to ``acc`` (every quantity in picohours, one slot per team of ``acc``)."""
        total_nominal = sum(nominal)
        available = cap_gpu - unavailable
        guarantee = nominal  # the same list: an unscaled hour
        if total_nominal > available:  # scaled down to the schedulable capacity, to the picohour below
            guarantee = [n * available // total_nominal for n in nominal]
            acc.scaled_hours += 1
        used = use[0] if use is not None else [0] * len(guarantee)
        borrowed = list(use[1]) if use is not None else [0] * len(guarantee)
        idle = [n - u_t + b_t for n, u_t, b_t in zip(guarantee, used, borrowed, strict=True)]
        if idle and min(idle) < 0:
            for i, n in enumerate(guarantee):
                if (
                    idle[i] < 0
                ):  # used above the guarantee without recording it as borrowed: Kueue's borrowing
                    borrowed[i], idle[i] = used[i] - n, 0
                    acc.reclassified += 1
        total_used = sum(used)
        total_borrowed = sum(borrowed)
        if total_used > cap_gpu:
            raise ChargebackInputError(
                f"usage on {itype} at {hour.isoformat()} is {_from_pico(total_used).normalize():f} GPU-hours, above the "
                f"node inventory's {_from_pico(cap_gpu).normalize():f}; the usage and node snapshots disagree (check the collector)."
            )
        if guarantee is acc.nominal:  # every team's nominal guarantee, unscaled
            acc.full_hours += 1
        else:
            acc.guaranteed = list(map(operator.add, acc.guaranteed, guarantee))
        acc.used = list(map(operator.add, acc.used, used))
        acc.borrowed = list(map(operator.add, acc.borrowed, borrowed))
        total_idle = sum(idle)
        lent = min(total_borrowed, total_idle)
        acc.idle = list(map(operator.add, acc.idle, idle))
        if lent:  # lent pro rata to what each team had idle (rounded down, in 1e-12 picohours)
            fine = lent * _FINE
            acc.lent = [a + fine * i // total_idle for a, i in zip(acc.lent, idle, strict=True)]
        acc.capacity += cap_gpu
        acc.unallocated += cap_gpu - sum(guarantee)
        acc.from_unallocated += total_borrowed - lent
        acc.idle_guaranteed_unlent += total_idle - lent


@dataclass(slots=True)
class _Block:
    """One instance type's usage in one hour, as columns (the teams in the records' order)."""

    teams: list[str]
    use: list[int]
    borrowed: list[int]
    #: What the columns were read from (for an error message).
    source: list[HourlyUsage] | HourlyUsageBlock

    def __bool__(self) -> bool:
        return bool(self.teams)

    def records(self) -> list[HourlyUsage]:
        """Return the records the columns were read from."""
        return _records(self.source)

    def extend(self, other: _Block) -> None:
        """Add ``other``'s records after this block's (the same type and hour, given apart)."""
        self.teams = self.teams + other.teams
        self.use = self.use + other.use
        self.borrowed = self.borrowed + other.borrowed
        self.source = self.records() + other.records()


def _records(run: list[HourlyUsage] | HourlyUsageBlock) -> list[HourlyUsage]:
    return list(run.records()) if isinstance(run, HourlyUsageBlock) else run


def _block(run: list[HourlyUsage] | HourlyUsageBlock, cluster: str) -> _Block | None:
    """Return a run of records (or a block) as columns; ``None`` when one of them is not of ``cluster``."""
    if isinstance(run, HourlyUsageBlock):
        if run.cluster != cluster:
            return None
        return _Block(list(run.teams), list(run.gpu_ms), list(run.borrowed_gpu_ms), run)
    if set(map(_CLUSTER, run)) != {cluster}:
        return None
    return _Block(list(map(_TEAM, run)), list(map(_GPU_MS, run)), list(map(_BORROWED_MS, run)), run)
