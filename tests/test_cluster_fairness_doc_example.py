"""The Task Governance documentation example on real Kueue: team A (quota 6) uses 2, team B (quota 5) uses 4, and
a 4-instance job of team B runs on 1 idle instance of its own and 3 borrowed from team A; one more waits.

A small platform of its own (``platforms.doc_example``: 12 ml.g5.8xlarge, one GPU each, one reserved) is applied
to the control plane (``cluster_platforms.on``, which replaces the platform applied before), with KWOK nodes to
match. The example is played twice by team members: on the Kueue backend's objects, then on this project's
reading of the Task Governance properties (``tests/support/task_governance_kueue.py``) applied in their place;
the cohort simulator plays both and must see what Kueue saw. The Kueue backend's objects are applied again at the
end.
"""

from __future__ import annotations

import platforms
import pytest
from cluster_platform import ClusterPlatforms
from fairness_on_cluster import await_admission, play, rendered, task_governance_reading
from kueue_scenarios import doc_example_scenario
from synth import synthesize

from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster


def test_the_documentation_example_plays_out_on_both_readings(
    cluster_platforms: ClusterPlatforms, tmp_path_factory: pytest.TempPathFactory
) -> None:
    platform = platforms.doc_example()
    on = cluster_platforms.on("doc-example", synthesize(platform, tmp_path_factory.mktemp("doc-example")))
    await_admission(on, "team-a")
    scenario = doc_example_scenario(build_plan(platform, month="2026-12"))
    play(on, rendered(on), scenario, "Kueue backend", person="doc-example")
    with task_governance_reading(on) as reading:
        play(on, reading, scenario, "Task Governance reading", person="doc-example")
