"""The chargeback engine: worked examples with hand-computed figures, error cases, and Hypothesis properties.

The worked examples start from the Task Governance documentation example (docs/fairness.md "The Task
Governance documentation example, worked through"): team A is guaranteed 6 instances and runs 2, team B is
guaranteed 5 and runs 4, then B's 4-instance job runs on 1 instance of its own guarantee and 3 borrowed from A. Here the
instances are ml.p5.48xlarge (8 GPUs) in a group of 12 with 1 reserved node, for 10 hours, at $10 a GPU-hour:

* per hour: capacity 96 GPUs; A guaranteed 48, uses 16 (idle 32); B guaranteed 40, uses 64 of which 24
  borrowed; unallocated 96 - 88 = 8; the 24 borrowed come from A's idle 32, so A lent 24;
* over 10 hours: A guaranteed 480, used 160, lent 240, idle unlent 80; B guaranteed 400, used 640, borrowed
  240; unallocated 80; idle guarantee nobody used 80.

Every expected number below is computed by hand from those figures, not by the engine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hyperpod_tenancy.chargeback.engine import (
    ChargebackInputError,
    compute_report,
    preemption_loss,
    term_in_force,
)
from hyperpod_tenancy.chargeback.model import (
    ALL_INSTANCE_TYPES,
    IDLE_ROW,
    MS_PER_HOUR,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    CostInputs,
    Eviction,
    HourlyCapacity,
    HourlyUsage,
    HourlyUsageBlock,
    InstanceTypeCost,
    LossBasis,
    PriceSource,
    Report,
    SharedCost,
    SharedCostRule,
    TeamCharge,
    TeamConfig,
    UsageInputs,
    UsageRecords,
    gpu_hours,
)

D = Decimal
P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
CLUSTER = "shared-gpu"
MONTH = "2026-07"
HOURS = [dt.datetime(2026, 7, 1, h, tzinfo=dt.UTC) for h in range(10)]


def ms(gpu_hours: object) -> int:
    """GPU-hours (a whole number of milliseconds of them) → GPU-milliseconds, the engine's input unit."""
    value = D(str(gpu_hours)) * MS_PER_HOUR
    assert value == value.to_integral_value(), gpu_hours
    return int(value)


FSX_AND_EKS = (SharedCost(category="fsx", cost=D(300)), SharedCost(category="eks", cost=D(200)))


def term(
    rule: BillingRule, idle_owner: str = "platform", *, since: str = "2026-01-01", **kw: object
) -> BillingTerm:
    return BillingTerm(effective_from=dt.date.fromisoformat(since), rule=rule, idle_owner=idle_owner, **kw)  # type: ignore[arg-type]


def config(
    *terms: BillingTerm, teams: tuple[TeamConfig, ...] | None = None, **kw: object
) -> ChargebackConfig:
    teams = teams or (
        TeamConfig(name="a", cost_center="cc-a", quotas={P5: 6}),
        TeamConfig(name="b", cost_center="cc-b", quotas={P5: 5}),
    )
    fields: dict[str, object] = {"gpus_per_instance": {P5: 8, G5: 1}, "prices": {P5: D(10), G5: D(2)}}
    fields.update(kw)
    return ChargebackConfig(cluster=CLUSTER, terms=terms, teams=teams, **fields)  # type: ignore[arg-type]


def use(hour: dt.datetime, team: str, gpu_hours: float, borrowed: float = 0, itype: str = P5) -> HourlyUsage:
    return HourlyUsage(
        hour=hour,
        cluster=CLUSTER,
        instance_type=itype,
        team=team,
        gpu_ms=ms(gpu_hours),
        borrowed_gpu_ms=ms(borrowed),
    )


def cap(hour: dt.datetime, gpu_hours: float, unavailable: float = 0, itype: str = P5) -> HourlyCapacity:
    return HourlyCapacity(
        hour=hour,
        cluster=CLUSTER,
        instance_type=itype,
        gpu_ms=ms(gpu_hours),
        unavailable_gpu_ms=ms(unavailable),
    )


def task_governance_example(unavailable: dict[int, float] | None = None) -> UsageInputs:
    unavailable = unavailable or {}
    return UsageInputs(
        usage=tuple(u for h in HOURS for u in (use(h, "a", 16), use(h, "b", 64, 24))),
        capacity=tuple(cap(h, 96, unavailable.get(i, 0)) for i, h in enumerate(HOURS)),
    )


def row(report: Report, team: str, itype: str = P5, cost_center: str | None = None) -> TeamCharge:
    [match] = [
        r
        for r in report.rows
        if r.team == team
        and r.instance_type == itype
        and (cost_center is None or r.cost_center == cost_center)
    ]
    return match


def figs(*values: object) -> tuple[object, ...]:
    """The figures as plain objects, so ``== (480, 160)`` compares Decimals with ints without a type complaint."""
    return values


def money(r: TeamCharge) -> tuple[object, ...]:
    return figs(r.gpu_charge, r.lender_credit, r.shared_charge, r.total)


# --- the Task Governance example under both rules --------------------------------------------------------


def test_reservation_charges_guarantees_and_borrowing_and_credits_the_lender() -> None:
    report = compute_report(
        config(term(BillingRule.RESERVATION)), MONTH, task_governance_example(), CostInputs()
    )
    a, b, idle = row(report, "a"), row(report, "b"), row(report, IDLE_ROW)
    assert figs(a.guaranteed_gpu_hours, a.used_gpu_hours, a.borrowed_gpu_hours) == (480, 160, 0)
    assert figs(a.lent_gpu_hours, a.idle_gpu_hours) == (240, 80)
    # A pays its guarantee 480 x $10 and is credited the 240 GPU-hours B borrowed from it
    assert money(a) == (D("4800.00"), D("2400.00"), 0, D("2400.00"))
    assert figs(b.guaranteed_gpu_hours, b.used_gpu_hours, b.borrowed_gpu_hours, b.lent_gpu_hours) == (
        400,
        640,
        240,
        0,
    )
    assert money(b) == (D("6400.00"), 0, 0, D("6400.00"))  # (400 + 240) x $10
    # the reserved node nobody used: 8 GPUs x 10 h, to the idle owner
    assert figs(idle.cost_center, idle.idle_gpu_hours, idle.lent_gpu_hours) == ("platform", 80, 0)
    assert money(idle) == (D("800.00"), 0, 0, D("800.00"))
    assert report.reconciliation.charged == D("9600.00")  # 96 GPUs x 10 h x $10
    assert figs(report.rule, report.idle_owner, report.price_sources) == (
        BillingRule.RESERVATION,
        "platform",
        {P5: PriceSource.PRICE_TABLE},
    )


def test_usage_charges_what_ran_and_gives_all_idle_to_the_idle_owner() -> None:
    report = compute_report(config(term(BillingRule.USAGE)), MONTH, task_governance_example(), CostInputs())
    a, b, idle = row(report, "a"), row(report, "b"), row(report, IDLE_ROW)
    assert money(a) == (D("1600.00"), 0, 0, D("1600.00"))  # 160 x $10
    assert money(b) == (D("6400.00"), 0, 0, D("6400.00"))  # 640 x $10
    assert a.idle_gpu_hours == b.idle_gpu_hours == 0
    assert a.lent_gpu_hours == 240  # still reported, not credited
    # idle = 80 unallocated + 80 of A's guarantee nobody used
    assert figs(idle.idle_gpu_hours, money(idle)) == (160, (D("1600.00"), 0, 0, D("1600.00")))
    assert report.reconciliation.charged == D("9600.00")


def test_a_node_recovering_inside_the_reserve_stays_with_the_idle_owner() -> None:
    # one node (8 GPUs) NotReady for 3 of the 10 hours: the reserved node covers it, guarantees are unchanged
    recovering = task_governance_example({0: 8, 1: 8, 2: 8})
    for rule in BillingRule:
        plain = compute_report(config(term(rule)), MONTH, task_governance_example(), CostInputs())
        report = compute_report(config(term(rule)), MONTH, recovering, CostInputs())
        assert report.rows == plain.rows
        assert report.notes == plain.notes


def test_more_nodes_recovering_than_reserved_scales_that_hours_guarantees() -> None:
    # 4 x 1-GPU instances, quotas 2 + 2 (no reserve), one node recovering for the hour: 3 schedulable GPUs
    # guarantees 1.5 each; A uses 1 (idle 0.5), B uses 2 = 1.5 own + 0.5 over its guarantee (counted as
    # borrowed, from A's idle 0.5); unallocated = 4 - 3 = 1 (the recovering node), price $2
    teams = (
        TeamConfig(name="a", cost_center="a", quotas={G5: 2}),
        TeamConfig(name="b", cost_center="b", quotas={G5: 2}),
    )
    inputs = UsageInputs(
        usage=(use(HOURS[0], "a", 1, itype=G5), use(HOURS[0], "b", 2, itype=G5)),
        capacity=(cap(HOURS[0], 4, 1, G5),),
    )
    report = compute_report(config(term(BillingRule.RESERVATION), teams=teams), MONTH, inputs, CostInputs())
    a, b, idle = row(report, "a", G5), row(report, "b", G5), row(report, IDLE_ROW, G5)
    assert figs(a.guaranteed_gpu_hours, a.lent_gpu_hours, a.idle_gpu_hours) == (D("1.5"), D("0.5"), 0)
    assert money(a) == (D("3.00"), D("1.00"), 0, D("2.00"))  # 1.5 x 2 - 0.5 x 2
    assert figs(b.guaranteed_gpu_hours, b.borrowed_gpu_hours) == (D("1.5"), D("0.5"))
    assert money(b) == (D("4.00"), 0, 0, D("4.00"))  # (1.5 + 0.5) x 2
    assert figs(idle.idle_gpu_hours, idle.total) == (1, D("2.00"))  # the recovering node
    assert report.reconciliation.charged == D("8.00")  # 4 GPU-hours x $2
    assert any("scaled down" in n for n in report.notes)
    assert any("counted as borrowed" in n for n in report.notes)


def test_borrowing_is_credited_to_lenders_pro_rata_to_their_idle() -> None:
    # 1-GPU instances, 20 in the group: A q6 uses 2 (idle 4), B q5 uses 3 (idle 2), C q4 uses 4 + borrows 3
    # lent 3 = A 3 x 4/6 = 2, B 3 x 2/6 = 1; unallocated 20 - 15 = 5; price $2
    teams = (
        TeamConfig(name="a", cost_center="a", quotas={G5: 6}),
        TeamConfig(name="b", cost_center="b", quotas={G5: 5}),
        TeamConfig(name="c", cost_center="c", quotas={G5: 4}),
    )
    h = HOURS[0]
    inputs = UsageInputs(
        usage=(use(h, "a", 2, itype=G5), use(h, "b", 3, itype=G5), use(h, "c", 7, 3, itype=G5)),
        capacity=(cap(h, 20, itype=G5),),
    )
    report = compute_report(config(term(BillingRule.RESERVATION), teams=teams), MONTH, inputs, CostInputs())
    assert [figs(r.team, r.lent_gpu_hours, r.idle_gpu_hours, r.total) for r in report.rows] == [
        (IDLE_ROW, 0, 5, D("10.00")),  # 5 x 2
        ("a", 2, 2, D("8.00")),  # 6 x 2 - 2 x 2
        ("b", 1, 1, D("8.00")),  # 5 x 2 - 1 x 2
        ("c", 0, 0, D("14.00")),  # (4 + 3) x 2
    ]


def test_borrowing_beyond_the_lenders_idle_credits_the_idle_owner() -> None:
    # 1-GPU instances, 12 in the group: A q6 uses 5 (idle 1), B q5 uses 7 with 2 borrowed:
    # 1 from A's idle, 1 from the unallocated node, which credits the idle owner; price $2
    teams = (
        TeamConfig(name="a", cost_center="a", quotas={G5: 6}),
        TeamConfig(name="b", cost_center="b", quotas={G5: 5}),
    )
    h = HOURS[0]
    inputs = UsageInputs(
        usage=(use(h, "a", 5, itype=G5), use(h, "b", 7, 2, itype=G5)), capacity=(cap(h, 12, itype=G5),)
    )
    report = compute_report(config(term(BillingRule.RESERVATION), teams=teams), MONTH, inputs, CostInputs())
    assert money(row(report, "a", G5)) == (D("12.00"), D("2.00"), 0, D("10.00"))
    assert money(row(report, "b", G5)) == (D("14.00"), 0, 0, D("14.00"))
    idle = row(report, IDLE_ROW, G5)
    assert figs(idle.lent_gpu_hours, idle.idle_gpu_hours) == (1, 0)
    assert money(idle) == (D("2.00"), D("2.00"), 0, 0)


# --- idle owner `shared`, shared costs ---------------------------------------------------------------------


def test_shared_idle_owner_splits_idle_by_guarantee_to_the_cent() -> None:
    report = compute_report(
        config(term(BillingRule.RESERVATION, SHARED)), MONTH, task_governance_example(), CostInputs()
    )
    # idle $800 split 480 : 400 = 6/11 : 5/11 = 436.3636... : 363.6363... (largest remainder gives B the cent)
    assert row(report, IDLE_ROW, cost_center="cc-a").total == D("436.36")
    assert row(report, IDLE_ROW, cost_center="cc-b").total == D("363.64")
    assert report.idle_owner == SHARED
    assert report.reconciliation.charged == D("9600.00")


def test_shared_costs_go_to_a_named_idle_owner() -> None:
    report = compute_report(
        config(term(BillingRule.USAGE)), MONTH, task_governance_example(), CostInputs(shared=FSX_AND_EKS)
    )
    shared = row(report, SHARED_COSTS_ROW, ALL_INSTANCE_TYPES)
    assert figs(shared.cost_center, money(shared)) == ("platform", (0, 0, D("500.00"), D("500.00")))
    assert report.reconciliation.charged == D("10100.00")


def test_shared_costs_split_by_guarantee() -> None:
    terms = term(BillingRule.RESERVATION, shared_costs=SharedCostRule.BY_GUARANTEE)
    report = compute_report(config(terms), MONTH, task_governance_example(), CostInputs(shared=FSX_AND_EKS))
    # $500 x 480/880 = 272.7272..., x 400/880 = 227.2727...
    assert row(report, "a").shared_charge == D("272.73")
    assert row(report, "b").shared_charge == D("227.27")
    assert row(report, "a").total == D("2672.73")
    assert not [r for r in report.rows if r.team == SHARED_COSTS_ROW]


# --- prices and reconciliation -----------------------------------------------------------------------------


def cur(cost: str, bill: str | None) -> CostInputs:
    # 12 instances x 10 h = 120 instance-hours; $9600 / 120 / 8 GPUs = $10 a GPU-hour
    return CostInputs(
        instance_types=(InstanceTypeCost(instance_type=P5, cost=D(cost), instance_hours=D(120)),),
        shared=FSX_AND_EKS,
        bill_total=None if bill is None else D(bill),
    )


def test_price_from_the_cur_and_a_bill_that_matches() -> None:
    for rule in BillingRule:
        report = compute_report(
            config(term(rule), prices={}), MONTH, task_governance_example(), cur("9600", "10100")
        )
        assert report.price_sources == {P5: PriceSource.CUR}
        assert report.gpu_hour_prices == {P5: D("10.000000")}
        assert report.reconciliation.charged == D("10100.00")
        assert figs(report.reconciliation.difference, report.reconciliation.flagged) == (0, False)


def test_a_bill_one_percent_off_is_flagged() -> None:
    report = compute_report(
        config(term(BillingRule.RESERVATION)), MONTH, task_governance_example(), cur("9600", "10201")
    )
    assert report.reconciliation.difference == D("-101.00")
    assert report.reconciliation.flagged  # 101 / 10201 = 0.99 % > 0.5 %


def test_a_bill_within_tolerance_is_not_flagged() -> None:
    report = compute_report(
        config(term(BillingRule.RESERVATION)), MONTH, task_governance_example(), cur("9600", "10140")
    )
    assert not report.reconciliation.flagged  # 40 / 10140 = 0.39 %


def test_inventory_that_disagrees_with_the_cur_is_noted() -> None:
    # the CUR bills 121 instance-hours where the inventory saw 120: price 9680/121/8 = $10, inventory $9600
    costs = CostInputs(
        instance_types=(InstanceTypeCost(instance_type=P5, cost=D(9680 * 1.1), instance_hours=D(121)),)
    )
    report = compute_report(
        config(term(BillingRule.USAGE), prices={}), MONTH, task_governance_example(), costs
    )
    assert report.reconciliation.flagged
    assert any("compare the inventory's instance-hours" in n for n in report.notes)


def test_a_missing_price_names_the_instance_type_and_the_fix() -> None:
    with pytest.raises(ChargebackInputError, match=r"no price for ml\.p5\.48xlarge: .*chargeback\.prices"):
        compute_report(
            config(term(BillingRule.USAGE), prices={}), MONTH, task_governance_example(), CostInputs()
        )


# --- preemption ---------------------------------------------------------------------------------------------


def eviction(
    gpus: int, run_started: str, cls: str, interval: int | None = None, checkpoint: str | None = None
) -> Eviction:
    at = dt.datetime(2026, 7, 1, 9, 30, tzinfo=dt.UTC)

    def t(hhmm: str) -> dt.datetime:
        return at.replace(hour=int(hhmm[:2]), minute=int(hhmm[3:]))

    return Eviction(
        time=at,
        cluster=CLUSTER,
        team="b",
        instance_type=P5,
        workload=f"job-{gpus}-{run_started}",
        priority_class=cls,
        gpus=gpus,
        run_started=t(run_started),
        checkpoint_interval_minutes=interval,
        last_checkpoint=None if checkpoint is None else t(checkpoint),
    )


def test_preemption_loss_per_eviction() -> None:
    measured, declared, whole = LossBasis.MEASURED, LossBasis.DECLARED_INTERVAL, LossBasis.WHOLE_RUN
    # collected checkpoint 09:15 -> 32 GPUs x 15 min = 8 (exact)
    assert figs(*preemption_loss(eviction(32, "07:00", "experimentation-priority", 30, "09:15"))) == (
        8,
        measured,
    )
    # declared 30 min, no checkpoint collected -> 32 x 0.5 = 16 (upper bound)
    assert figs(*preemption_loss(eviction(32, "07:00", "experimentation-priority", 30))) == (16, declared)
    # nothing declared: nothing made it checkpoint -> the whole run, 45 min -> 8 x 0.75 = 6, whatever the class
    assert figs(*preemption_loss(eviction(8, "08:45", "training-priority"))) == (6, whole)
    assert figs(*preemption_loss(eviction(8, "07:30", "other-priority"))) == (16, whole)
    # a checkpoint from before the run started counts from the run's start: 8 x 30 min = 4
    assert figs(*preemption_loss(eviction(8, "09:00", "training-priority", 30, "08:00"))) == (4, measured)


def test_an_undeclared_eviction_loses_the_whole_run_not_the_class_bound() -> None:
    """A 32-GPU job admitted 300 hours before its eviction, at a class whose bound is 1 h, declared nothing (it
    ran under `checkpointEnforcement: warn`, or at a class only its own team's higher priority preempts): 9,600
    GPU-hours are gone, not the 32 the class bound would say."""
    at = dt.datetime(2026, 7, 20, 12, tzinfo=dt.UTC)
    evicted = dataclasses.replace(
        eviction(32, "07:00", "training-priority"), time=at, run_started=at - dt.timedelta(hours=300)
    )
    assert figs(*preemption_loss(evicted)) == (9600, LossBasis.WHOLE_RUN)


def test_preemption_loss_per_team_and_priority_class_in_the_report() -> None:
    inputs = dataclasses.replace(
        task_governance_example(),
        evictions=(
            eviction(32, "07:00", "experimentation-priority", 30, "09:15"),
            eviction(32, "07:00", "experimentation-priority", 30),
            eviction(8, "08:45", "training-priority"),
        ),
    )
    cfg = config(term(BillingRule.RESERVATION), max_checkpoint_minutes={"training-priority": 60})
    report = compute_report(cfg, MONTH, inputs, CostInputs())
    assert row(report, "b").lost_to_preemption_gpu_hours == 30  # 8 + 16 + 6
    assert [
        figs(p.team, p.priority_class, p.evictions, p.lost_gpu_hours, p.upper_bound, p.bases)
        for p in report.preemption_losses
    ] == [
        ("b", "experimentation-priority", 2, 24, True, (LossBasis.MEASURED, LossBasis.DECLARED_INTERVAL)),
        ("b", "training-priority", 1, 6, True, (LossBasis.WHOLE_RUN,)),
    ]
    assert report.preemption_loss_is_upper_bound
    exact = dataclasses.replace(inputs, evictions=inputs.evictions[:1])
    assert not compute_report(cfg, MONTH, exact, CostInputs()).preemption_loss_is_upper_bound


# --- billing terms ------------------------------------------------------------------------------------------


def test_the_term_in_force_on_the_first_day_applies_to_the_month() -> None:
    terms = (
        term(BillingRule.RESERVATION, since="2026-01-01"),
        term(BillingRule.USAGE, SHARED, since="2026-07-01"),
        term(BillingRule.RESERVATION, "finance", since="2026-08-15"),
    )
    assert term_in_force(terms, dt.date(2026, 6, 1)).rule is BillingRule.RESERVATION
    assert term_in_force(terms, dt.date(2026, 7, 1)).idle_owner == SHARED
    assert term_in_force(terms, dt.date(2026, 8, 1)).idle_owner == SHARED  # mid-month: from September
    assert term_in_force(terms, dt.date(2026, 9, 1)).idle_owner == "finance"
    with pytest.raises(ChargebackInputError, match=r"no billing term is in force on 2025-12-01 .*2026-01-01"):
        term_in_force(terms, dt.date(2025, 12, 1))


def test_a_rule_change_mid_year_leaves_earlier_months_unchanged() -> None:
    before = compute_report(
        config(term(BillingRule.RESERVATION)), MONTH, task_governance_example(), CostInputs()
    )
    changed = config(term(BillingRule.RESERVATION), term(BillingRule.USAGE, SHARED, since="2026-08-01"))
    assert compute_report(changed, MONTH, task_governance_example(), CostInputs()) == before


# --- bad inputs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        pytest.param(
            UsageInputs(usage=(use(HOURS[0], "a", 100),), capacity=(cap(HOURS[0], 96),)),
            r"usage on ml\.p5\.48xlarge at 2026-07-01T00:00:00\+00:00 is 100 GPU-hours, above the node inventory's 96",
            id="usage-above-capacity",
        ),
        pytest.param(
            UsageInputs(usage=(use(HOURS[1], "a", 8),), capacity=(cap(HOURS[0], 96),)),
            r"usage of team 'a' on ml\.p5\.48xlarge at 2026-07-01T01:00:00\+00:00 has no capacity record",
            id="usage-without-inventory",
        ),
        pytest.param(
            UsageInputs(usage=(), capacity=(cap(dt.datetime(2026, 8, 1, tzinfo=dt.UTC), 96),)),
            r"2026-08-01T00:00:00\+00:00 is outside 2026-07",
            id="outside-the-month",
        ),
        pytest.param(
            UsageInputs(usage=(use(HOURS[0], "a", 8, 9),), capacity=(cap(HOURS[0], 96),)),
            r"the borrowed part at most the total",
            id="borrowed-above-used",
        ),
        pytest.param(
            UsageInputs(usage=(), capacity=(cap(HOURS[0], 96, 97),)),
            r"the unavailable part between 0 and the capacity",
            id="unavailable-above-capacity",
        ),
        pytest.param(
            UsageInputs(usage=(), capacity=(dataclasses.replace(cap(HOURS[0], 96), cluster="other"),)),
            r"is for cluster 'other', not 'shared-gpu'",
            id="other-cluster",
        ),
        pytest.param(
            UsageInputs(usage=(), capacity=(cap(HOURS[0], 96), cap(HOURS[0], 96))),
            r"appears twice",
            id="duplicate",
        ),
        pytest.param(
            UsageInputs(
                usage=(use(HOURS[0], "a", 8), use(HOURS[0], "b", 8), use(HOURS[0], "a", 8)),
                capacity=(cap(HOURS[0], 96),),
            ),
            r"usage of team 'a' .* appears twice",
            id="duplicate-usage",
        ),
        pytest.param(
            UsageInputs(
                usage=(use(HOURS[0], "a", 8), use(HOURS[0], "b", 8)._replace(cluster="other")),
                capacity=(cap(HOURS[0], 96),),
            ),
            r"usage of team 'b' .* is for cluster 'other', not 'shared-gpu'",
            id="usage-of-another-cluster",
        ),
        pytest.param(
            UsageInputs(usage=(use(HOURS[0], "a", 8)._replace(gpu_ms=1.5),), capacity=(cap(HOURS[0], 96),)),
            r"1\.5 GPU-ms with 0 borrowed; both must be whole numbers of GPU-milliseconds",
            id="fractional-milliseconds",
        ),
        pytest.param(
            UsageInputs(
                usage=(use(HOURS[0], "a", 8)._replace(borrowed_gpu_ms=-1),), capacity=(cap(HOURS[0], 96),)
            ),
            r"-1 borrowed; both must be whole numbers of GPU-milliseconds >= 0",
            id="negative-borrowing",
        ),
    ],
)
def test_inconsistent_inputs_are_refused_with_the_record_named(inputs: UsageInputs, message: str) -> None:
    with pytest.raises(ChargebackInputError, match=message):
        compute_report(config(term(BillingRule.USAGE)), MONTH, inputs, CostInputs())


def test_a_bad_month_is_refused() -> None:
    with pytest.raises(ChargebackInputError, match=r"month '2026-7' is not YYYY-MM"):
        compute_report(config(term(BillingRule.USAGE)), "2026-7", task_governance_example(), CostInputs())


def test_a_team_missing_from_the_policy_is_billed_under_its_name_and_noted() -> None:
    inputs = UsageInputs(usage=(use(HOURS[0], "ghost", 8),), capacity=(cap(HOURS[0], 96),))
    report = compute_report(config(term(BillingRule.USAGE)), MONTH, inputs, CostInputs())
    ghost = row(report, "ghost")
    assert figs(ghost.cost_center, ghost.total) == ("ghost", D("80.00"))
    assert any(
        "'ghost' has usage, evictions or tagged bill lines but is not in the policy" in n
        for n in report.notes
    )


# --- properties ---------------------------------------------------------------------------------------------

TYPES = {P5: 8, "ml.g6.12xlarge": 4, G5: 1}
QUARTER = D("0.25")


@st.composite
def months(draw: st.DrawFn) -> tuple[ChargebackConfig, UsageInputs, CostInputs]:
    """A random but consistent month: quotas within the groups, usage within capacity, a CUR that matches."""
    n_teams = draw(st.integers(1, 4))
    itypes = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=3, unique=True))
    quotas = {t: {f: draw(st.integers(0, 4)) for f in itypes} for t in range(n_teams)}
    teams = tuple(
        TeamConfig(name=f"t{t}", cost_center=f"cc{t % 2}", quotas={f: q for f, q in quotas[t].items() if q})
        for t in range(n_teams)
    )
    rule = draw(st.sampled_from(list(BillingRule)))
    owner = draw(st.sampled_from([SHARED, "platform"]))
    shared_rule = draw(st.sampled_from(list(SharedCostRule)))
    if not any(t.quotas for t in teams):  # `shared` splits by guarantee: someone must hold one
        owner, shared_rule = "platform", SharedCostRule.IDLE_OWNER
    usage: list[HourlyUsage] = []
    capacity: list[HourlyCapacity] = []
    cur: list[InstanceTypeCost] = []
    hours = HOURS[: draw(st.integers(1, 4))]
    for f in itypes:
        gpus = TYPES[f]
        instances = sum(q[f] for q in quotas.values()) + draw(st.integers(0, 2))
        if instances == 0:
            instances = 1
        for h in hours:
            c = D(instances * gpus)
            unavailable = draw(st.integers(0, instances)) * gpus * QUARTER * draw(st.integers(0, 4))
            capacity.append(cap(h, 0, itype=f))
            capacity[-1] = dataclasses.replace(capacity[-1], gpu_ms=ms(c), unavailable_gpu_ms=ms(unavailable))
            left = c
            for t in range(n_teams):
                used = min(left, draw(st.integers(0, int(c) * 4)) * QUARTER)
                borrowed = min(used, draw(st.integers(0, int(used / QUARTER))) * QUARTER)
                left -= used
                if used:
                    usage.append(
                        HourlyUsage(
                            hour=h,
                            cluster=CLUSTER,
                            instance_type=f,
                            team=f"t{t}",
                            gpu_ms=ms(used),
                            borrowed_gpu_ms=ms(borrowed),
                        )
                    )
        instance_price = draw(st.integers(1, 200)) * D("0.37")
        instance_hours = D(instances * len(hours))
        cur.append(
            InstanceTypeCost(
                instance_type=f, cost=instance_price * instance_hours, instance_hours=instance_hours
            )
        )
    shared = tuple(
        SharedCost(category=c, cost=draw(st.integers(0, 10**6)) * D("0.01")) for c in ("fsx", "eks")
    )
    bill = sum((c.cost for c in cur), D(0)) + sum((s.cost for s in shared), D(0))
    cfg = ChargebackConfig(
        cluster=CLUSTER,
        terms=(
            BillingTerm(
                effective_from=dt.date(2026, 1, 1), rule=rule, idle_owner=owner, shared_costs=shared_rule
            ),
        ),
        teams=teams,
        gpus_per_instance=dict(TYPES),
    )
    return (
        cfg,
        UsageInputs(usage=tuple(usage), capacity=tuple(capacity)),
        CostInputs(instance_types=tuple(cur), shared=shared, bill_total=bill),
    )


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(months())
def test_totals_reconcile_to_the_cent_and_rows_add_up(
    month: tuple[ChargebackConfig, UsageInputs, CostInputs],
) -> None:
    cfg, inputs, costs = month
    report = compute_report(cfg, MONTH, inputs, costs)
    rec = report.reconciliation
    assert rec.bill is not None and rec.difference is not None
    assert abs(rec.difference) <= D("0.01")
    assert not rec.flagged
    assert rec.charged == sum(r.total for r in report.rows)
    for r in report.rows:
        assert r.total == r.gpu_charge - r.lender_credit + r.shared_charge
    # every GPU-hour of capacity is either used by a team or idle on exactly one row (to the rounding)
    for f in {c.instance_type for c in inputs.capacity}:
        capacity = sum((gpu_hours(c.gpu_ms) for c in inputs.capacity if c.instance_type == f), D(0))
        rows = [r for r in report.rows if r.instance_type == f]
        accounted = sum((r.used_gpu_hours + r.idle_gpu_hours for r in rows), D(0))
        assert abs(accounted - capacity) <= D("0.0001") * len(rows)


@PROPERTY
@given(months())
def test_no_charge_is_negative(month: tuple[ChargebackConfig, UsageInputs, CostInputs]) -> None:
    cfg, inputs, costs = month
    report = compute_report(cfg, MONTH, inputs, costs)
    for r in report.rows:
        figures = (
            r.guaranteed_gpu_hours,
            r.used_gpu_hours,
            r.borrowed_gpu_hours,
            r.lent_gpu_hours,
            r.idle_gpu_hours,
        )
        assert min(figures) >= 0, r
        assert min(r.gpu_charge, r.lender_credit, r.shared_charge, r.total) >= 0, r
        assert r.lender_credit <= r.gpu_charge, r


@PROPERTY
@given(months(), st.randoms(use_true_random=False))
def test_reruns_are_identical_whatever_the_input_order(
    month: tuple[ChargebackConfig, UsageInputs, CostInputs], rnd: random.Random
) -> None:
    cfg, inputs, costs = month
    first = compute_report(cfg, MONTH, inputs, costs)
    usage, capacity = list(inputs.usage), list(inputs.capacity)
    rnd.shuffle(usage)
    rnd.shuffle(capacity)
    shuffled = UsageInputs(usage=tuple(usage), capacity=tuple(capacity))
    assert compute_report(cfg, MONTH, shuffled, costs) == first
    assert compute_report(cfg, MONTH, inputs, costs) == first


@PROPERTY
@given(months(), st.sampled_from(list(BillingRule)), st.sampled_from([SHARED, "finance"]))
def test_a_later_rule_change_leaves_the_month_unchanged(
    month: tuple[ChargebackConfig, UsageInputs, CostInputs], rule: BillingRule, owner: str
) -> None:
    cfg, inputs, costs = month
    before = compute_report(cfg, MONTH, inputs, costs)
    later = BillingTerm(effective_from=dt.date(2026, 7, 2), rule=rule, idle_owner=owner)
    changed = dataclasses.replace(cfg, terms=(*cfg.terms, later))
    assert compute_report(changed, MONTH, inputs, costs) == before


# ---------------------------------------------------------------------------------------------- usage in blocks
def blocks_of(usage: tuple[HourlyUsage, ...] | list[HourlyUsage]) -> UsageRecords:
    """The records as blocks, one per (instance type, hour) run, in the records' order."""
    return UsageRecords(
        HourlyUsageBlock(
            hour=hour,
            cluster=run[0].cluster,
            instance_type=itype,
            teams=[u.team for u in run],
            gpu_ms=[u.gpu_ms for u in run],
            borrowed_gpu_ms=[u.borrowed_gpu_ms for u in run],
        )
        for (itype, hour), group in itertools.groupby(usage, key=lambda u: (u.instance_type, u.hour))
        for run in [list(group)]
    )


@PROPERTY
@given(months(), st.randoms(use_true_random=False))
def test_blocks_give_the_report_records_give(
    month: tuple[ChargebackConfig, UsageInputs, CostInputs], rnd: random.Random
) -> None:
    cfg, inputs, costs = month
    expected = compute_report(cfg, MONTH, inputs, costs)
    usage = list(inputs.usage)
    assert (
        compute_report(cfg, MONTH, UsageInputs(usage=blocks_of(usage), capacity=inputs.capacity), costs)
        == expected
    )
    rnd.shuffle(usage)  # runs of one key split across several blocks, in any order
    assert (
        compute_report(cfg, MONTH, UsageInputs(usage=blocks_of(usage), capacity=inputs.capacity), costs)
        == expected
    )


def _error(cfg: ChargebackConfig, usage: tuple[HourlyUsage, ...] | UsageRecords, inputs: UsageInputs) -> str:
    with pytest.raises(ChargebackInputError) as raised:
        compute_report(cfg, MONTH, UsageInputs(usage=usage, capacity=inputs.capacity), CostInputs())
    return str(raised.value)


@PROPERTY
@given(months(), st.sampled_from(["cluster", "negative", "over", "twice", "hour"]))
def test_blocks_are_refused_with_the_error_records_get(
    month: tuple[ChargebackConfig, UsageInputs, CostInputs], fault: str
) -> None:
    cfg, inputs, _ = month
    usage = list(inputs.usage)
    if not usage:
        return
    u = usage[0]
    if fault == "cluster":
        usage[0] = u._replace(cluster="other")
    elif fault == "negative":
        usage[0] = u._replace(borrowed_gpu_ms=-1)
    elif fault == "over":
        usage[0] = u._replace(borrowed_gpu_ms=u.gpu_ms + 1)
    elif fault == "twice":
        usage.insert(1, u)
    else:
        usage[0] = u._replace(hour=dt.datetime(2026, 9, 1, tzinfo=dt.UTC))
    assert _error(cfg, blocks_of(usage), inputs) == _error(cfg, tuple(usage), inputs)
