"""Non-destructive checks on a cluster: the local control plane, or a deployed one.

With ``HYPERPOD_TENANCY_KUBECONFIG`` naming a kubeconfig (an administrator's), the checks run against that
cluster and the platform of ``PLATFORM_FILE`` (default ``platform.yaml``), as deployed: every rendered object
passes a server-side dry run (accepted, no warning), and the API server's own authorizer (SubjectAccessReview)
answers what each team's group may do. Nothing there is created, changed or deleted (docs/testing.md).

Without it, the reference platform (both fairness backends) is applied to the local control plane first
(``tests/support/control_plane.py``), so the dry run also shows that a second deploy changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import platforms
import pytest
from cluster_apply import AppliedPlatform, flat, same_value, synthesized_objects
from cluster_platform import ClusterPlatforms
from control_plane import DEPLOYED_KUBECONFIG
from kube_client import KubeClient
from synth import Synth, synthesize

from hyperpod_tenancy.policy import Platform, load_platform, names

pytestmark = pytest.mark.cluster

DEPLOYED = bool(os.environ.get(DEPLOYED_KUBECONFIG))


@dataclass(frozen=True)
class OnCluster:
    """A platform, its rendered objects and the objects as applied (webhooks pointed at the local server)."""

    platform: Platform
    applied: AppliedPlatform
    objects: list[dict[str, Any]]


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The fields a dry run would change, but for bookkeeping and a quantity's form.

    ``managedFields`` and ``generation`` are the server's bookkeeping of the write itself. A Kueue quantity
    given as a number (``12``) is stored as its canonical string (``"12"``): server-side apply sees a
    difference and writes the same value again; ``kubectl apply``, which CDK's manifest handler runs, compares
    with its last-applied annotation and sends nothing. Only another value counts (:func:`same_value`).
    """
    skip = ("metadata.managedFields", "metadata.generation")
    mine, theirs = dict(flat(before)), dict(flat(after))
    return [
        (f, mine.get(f), theirs.get(f))
        for f in sorted(mine.keys() | theirs.keys())
        if not f.startswith(skip) and not same_value(theirs.get(f), mine.get(f))
    ]


#: The name each local platform is applied under, shared with the other modules' fixtures.
APPLIED_AS = {"reference": "reference", "kueue_reference": "reference-kueue"}


@pytest.fixture(scope="module", params=["reference"] if DEPLOYED else ["reference", "kueue_reference"])
def on_cluster(
    request: pytest.FixtureRequest, cluster_api: KubeClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OnCluster]:
    """A platform's objects as they are on the cluster: deployed already, or applied to the local one now."""
    if DEPLOYED:
        platform: Platform = load_platform(
            os.environ.get("PLATFORM_FILE", str(platforms.REPO / "platform.yaml"))
        )
        synth = synthesize(platform, tmp_path_factory.mktemp("deployed"))
        applied = synthesized_objects("deployed", synth)
        yield OnCluster(platform, applied, applied.objects)
        return
    platforms_on: ClusterPlatforms = request.getfixturevalue("cluster_platforms")
    local: Synth = request.getfixturevalue(request.param)
    applied = platforms_on.on(APPLIED_AS[request.param], local)
    yield OnCluster(local.platform, applied.applied, applied.objects)


def test_every_rendered_object_passes_a_server_side_dry_run(
    on_cluster: OnCluster, cluster_api: KubeClient
) -> None:
    refused, warned, changed = [], [], []
    for obj in on_cluster.objects:
        before = None if DEPLOYED else cluster_api.get(obj)
        answer = cluster_api.apply(obj, dry_run=True)
        label = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if not answer.ok:
            refused.append(f"{label}: {answer.status} {answer.message}")
            continue
        warned += [f"{label}: {w}" for w in answer.warnings]
        if before is not None and (fields := _changes(before, answer.body)):
            changed.append(f"{label}: {fields}")
    assert refused == [], "\n".join(refused)
    assert warned == [], "\n".join(warned)
    assert changed == [], f"a second apply would change: {changed}"


def test_a_team_group_works_in_its_namespace_and_nowhere_else(
    on_cluster: OnCluster, cluster_api: KubeClient
) -> None:
    teams = [t.name for t in on_cluster.platform.hosted_teams]
    assert len(teams) >= 2, teams
    for team in teams:
        namespace = names.namespace(team)
        user, groups = f"alice@{team}", [names.kubernetes_group(team), "system:authenticated"]
        own = {"namespace": namespace, "group": "batch", "resource": "jobs", "verb": "create"}
        assert cluster_api.access_review(user=user, groups=groups, attributes=own), (user, own)
        for other in map(names.namespace, teams):
            if other != namespace:
                foreign = {**own, "namespace": other}
                assert not cluster_api.access_review(user=user, groups=groups, attributes=foreign), (
                    user,
                    foreign,
                )
        quota = {
            "namespace": namespace,
            "resource": "resourcequotas",
            "verb": "update",
            "name": "compute-ceiling",
        }
        assert not cluster_api.access_review(user=user, groups=groups, attributes=quota), (user, quota)
        label = {"resource": "namespaces", "verb": "patch", "name": namespace}
        assert not cluster_api.access_review(user=user, groups=groups, attributes=label), (user, label)
