"""What the engine reads for a month: usage, capacity, evictions, gaps, team periods and costs."""

from __future__ import annotations

import datetime as dt
import itertools
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, overload

__all__ = [
    "MS_PER_HOUR",
    "SLICES_PER_GPU",
    "BillCredit",
    "CollectionGap",
    "CostInputs",
    "Eviction",
    "HourlyCapacity",
    "HourlyUsage",
    "HourlyUsageBlock",
    "InstanceTypeCost",
    "SharedCost",
    "TeamCost",
    "TeamPeriod",
    "UsageInputs",
    "UsageRecords",
    "gpu_hours",
]

#: Milliseconds per hour: GPU-hours = GPU-milliseconds / MS_PER_HOUR.
MS_PER_HOUR = 3_600_000

#: Compute slices of a GPU that NVIDIA MIG partitions (NVIDIA MIG User Guide, "Supported MIG Profiles": each slice
#: is 1/7 of the GPU's SMs); a partition of profile ``<g>g.<m>gb`` is ``g`` of them. The policy's
#: ``hyperpod_tenancy.policy.mig.COMPUTE_SLICES``, repeated here because the engine is self-contained (a test
#: keeps the two equal).
SLICES_PER_GPU = 7


def gpu_hours(gpu_ms: int) -> Decimal:
    """GPU-milliseconds (of :class:`HourlyUsage` or :class:`HourlyCapacity`) in GPU-hours, for reading them."""
    return Decimal(gpu_ms) / MS_PER_HOUR


class HourlyUsage(NamedTuple):
    """GPU-time a team's admitted work held in one clock hour on one instance type (from Kueue snapshots).

    In whole GPU-milliseconds, as the SQL integrates the snapshots: exact, and an ``int`` is a fraction of the cost
    of a ``Decimal`` over the ~10^5-10^6 records of a month. A named tuple rather than a frozen dataclass for the
    same reason (a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``). Build it with
    keywords, as every other input.
    """

    hour: dt.datetime
    cluster: str
    instance_type: str
    team: str
    #: GPU-milliseconds of everything the team's admitted workloads held (own quota + borrowed).
    gpu_ms: int
    #: The part over the team's nominal quota (Kueue ``borrowed``), GPU-milliseconds.
    borrowed_gpu_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class HourlyUsageBlock:
    """Every team's usage of one instance type in one clock hour, a column per field (teams in the rows' order).

    The records of one hour and type, held as three columns instead of one :class:`HourlyUsage` each: the form a
    month's 10^6 and more usage rows take when read in bulk (the offline CLI), where an object per row would cost
    more time and memory than the engine's own work. ``teams``, ``gpu_ms`` and ``borrowed_gpu_ms`` have one entry
    per team.
    """

    hour: dt.datetime
    cluster: str
    instance_type: str
    teams: Sequence[str]
    gpu_ms: Sequence[int]
    borrowed_gpu_ms: Sequence[int]

    def records(self) -> tuple[HourlyUsage, ...]:
        """Return the block's records, one per team."""
        hour, cluster, itype = self.hour, self.cluster, self.instance_type
        return tuple(
            HourlyUsage(hour=hour, cluster=cluster, instance_type=itype, team=t, gpu_ms=g, borrowed_gpu_ms=b)
            for t, g, b in zip(self.teams, self.gpu_ms, self.borrowed_gpu_ms, strict=True)
        )


class UsageRecords(Sequence[HourlyUsage]):
    """A sequence of :class:`HourlyUsage` held as :class:`HourlyUsageBlock` s; each record is made when read.

    Equal to any sequence of the same records (a tuple of them included). The engine reads the blocks directly.
    """

    __slots__ = ("_starts", "blocks")

    def __init__(self, blocks: Iterable[HourlyUsageBlock]) -> None:
        #: The blocks, in order.
        self.blocks: tuple[HourlyUsageBlock, ...] = tuple(blocks)
        for block in self.blocks:
            if not len(block.teams) == len(block.gpu_ms) == len(block.borrowed_gpu_ms):
                raise ValueError(
                    f"usage block of {block.instance_type} at {block.hour.isoformat()}: teams, gpu_ms and "
                    "borrowed_gpu_ms differ in length"
                )
        self._starts = [0, *itertools.accumulate(len(b.teams) for b in self.blocks)]

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, index: int) -> HourlyUsage: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[HourlyUsage, ...]: ...

    def __getitem__(self, index: int | slice) -> HourlyUsage | tuple[HourlyUsage, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("usage record index out of range")
        b = bisect_right(self._starts, position) - 1
        return self.blocks[b].records()[position - self._starts[b]]

    def __iter__(self) -> Iterator[HourlyUsage]:
        for block in self.blocks:
            yield from block.records()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UsageRecords({len(self)} records in {len(self.blocks)} blocks)"


@dataclass(frozen=True, kw_only=True, slots=True)
class HourlyCapacity:
    """GPU capacity of one instance type in one clock hour (from the node inventory), in GPU-milliseconds."""

    hour: dt.datetime
    cluster: str
    instance_type: str
    #: GPU-milliseconds of every instance of the type in the cluster that hour.
    gpu_ms: int
    #: The part on nodes that were not schedulable (recovering, deep health checks, NotReady).
    unavailable_gpu_ms: int


@dataclass(frozen=True, kw_only=True)
class Eviction:
    """A workload evicted by preemption."""

    time: dt.datetime
    cluster: str
    team: str
    instance_type: str
    workload: str
    priority_class: str
    gpus: int
    #: When the evicted run started (admission time).
    run_started: dt.datetime
    #: Declared checkpoint interval in minutes (admission annotation), ``None`` where none was declared.
    checkpoint_interval_minutes: int | None = None
    #: Newest checkpoint before the eviction, where collected; else the loss is an upper bound.
    last_checkpoint: dt.datetime | None = None


@dataclass(frozen=True, kw_only=True)
class CollectionGap:
    """A stretch of the month in which one collector wrote nothing for longer than its threshold.

    The SQL (``collection_gaps``) finds it between consecutive records of the collector's table, the month's
    start and end standing in for records. Inside a gap the last snapshot before it holds (the usage and the
    capacity are billed as they were last seen): the report lists the gap so that a reader can judge it.
    """

    #: The table whose records stopped: ``node`` (the platform's node inventory) or ``heartdub`` (the heartbeat
    #: of the usage-report operator, which writes the ``clusterqueue`` snapshots).
    table: str
    #: The last record before the gap (or the month's start).
    start: dt.datetime
    #: The first record after it (or the month's end).
    end: dt.datetime

    @property
    def minutes(self) -> int:
        """Length of the gap in whole minutes (rounded down)."""
        return int((self.end - self.start).total_seconds() // 60)

    @property
    def hours(self) -> tuple[dt.datetime, ...]:
        """Every clock hour the gap overlaps (its first hour is the hour of :attr:`start`)."""
        first = self.start.replace(minute=0, second=0, microsecond=0)
        count = max(1, -(-int((self.end - first).total_seconds()) // 3600))
        return tuple(first + dt.timedelta(hours=h) for h in range(count))


@dataclass(frozen=True, kw_only=True)
class TeamPeriod:
    """The clock hours of the month in which a team's quota exists (its queue's snapshots): its billed period.

    The team's guarantee is billed from :attr:`start` to :attr:`end` only; outside them its capacity is the idle
    owner's, whatever the configuration of record says.
    """

    team: str
    #: The first hour (the top of the hour of the queue's first snapshot, or the month's start).
    start: dt.datetime
    #: The end of the last hour (one hour after the top of the hour of the queue's last snapshot of the month).
    end: dt.datetime

    @property
    def hours(self) -> int:
        """The number of clock hours billed."""
        return int((self.end - self.start).total_seconds() // 3600)


@dataclass(frozen=True, kw_only=True)
class UsageInputs:
    """The month's usage data (what the SQL returns)."""

    #: The records (a tuple, or :class:`UsageRecords` when read in blocks).
    usage: Sequence[HourlyUsage]
    capacity: tuple[HourlyCapacity, ...]
    evictions: tuple[Eviction, ...] = ()
    #: Gaps in the collectors' records (sorted by table, then start).
    collection_gaps: tuple[CollectionGap, ...] = ()
    #: Tables whose gaps could not be checked (no such table in the inputs), with the reason.
    unchecked_collections: tuple[str, ...] = ()
    #: Each team's billed period (sorted by team); ``None``: not known, every team of the configuration is billed
    #: its guarantee for the whole month. A team of the configuration without a period has no guarantee.
    team_periods: tuple[TeamPeriod, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class InstanceTypeCost:
    """The month's SageMaker cluster usage line for one instance type (CUR ``<region>-Cluster:ml.<type>``)."""

    instance_type: str
    cost: Decimal
    instance_hours: Decimal


@dataclass(frozen=True, kw_only=True)
class SharedCost:
    """One of the cluster's non-GPU cost lines for the month (FSx, EKS, system nodes, NAT, ...)."""

    category: str
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class TeamCost:
    """The month's cost of the lines one team's tag names (its stack's resources, its Studio apps and spaces)."""

    team: str
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class BillCredit:
    """A credit or refund on the month's bill (CUR ``line_item_line_item_type`` ``Credit`` or ``Refund``).

    Never part of a GPU-hour's price nor of a shared cost: the charges are reconciled with the bill before credits
    and refunds, and the report lists each one with its amount.
    """

    #: ``credit`` or ``refund``.
    kind: str
    #: What it is against: an instance type (``ml.p5.48xlarge``), a team, or a shared-cost category (``fsx``).
    name: str
    #: The amount (negative for a credit).
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class CostInputs:
    """The month's bill for the cluster (from the CUR), or ``None`` parts when only prices are known."""

    instance_types: tuple[InstanceTypeCost, ...] = ()
    shared: tuple[SharedCost, ...] = ()
    #: Lines a team's tag names, per team: charged to that team alone.
    teams: tuple[TeamCost, ...] = ()
    #: The cluster's whole bill for the month (every line above and the credits); ``None`` without a CUR.
    bill_total: Decimal | None = None
    #: Credits and refunds on the bill, by kind and name (in ``bill_total``, in no other line).
    credits: tuple[BillCredit, ...] = ()
