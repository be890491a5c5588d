"""The live reader of ``hyperpod-tenancy explain``: the objects around a Workload, with the user's own kubeconfig.

Every read is one a team member's Kubernetes group may make (the team Role and the queue-reader ClusterRole of
:mod:`hyperpod_tenancy.k8s.team_manifests`), and nothing else is asked:

* ``list`` Kueue ``workloads`` in the team namespace (the one to explain, found by its name or its job's name,
  and the team's other work that holds quota);
* ``get`` the team's own ``clusterqueues/<hyperpod-ns-<team>-clusterqueue>`` (cluster-scoped, by name: the
  queue-reader ClusterRole grants exactly that name);
* ``list`` ``events`` in the team namespace, with ``fieldSelector involvedObject.name=<name>`` for the
  Workload and for its job;
* ``list`` ``pods`` in the team namespace.

Other teams' ClusterQueues are never requested. Objects come back as the API's JSON (``_preload_content=False``),
the same shape as ``kubectl get -o json``, so the diagnosis reads one format from both paths.
"""

from __future__ import annotations

import json
from typing import Any

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.tools.explain.objects import (
    KUEUE_GROUP,
    ExplainInputError,
    Objects,
    owner_names,
    select_workload,
)

__all__ = ["KUEUE_VERSION", "context_namespace", "read_live"]

#: The Kueue API version read (v1beta2, the storage version of Kueue v0.19).
KUEUE_VERSION = "v1beta2"
_TIMEOUT = 15

Read = tuple[str, str, str, str | None, str]


def context_namespace(kubeconfig: str | None, context: str | None) -> str | None:
    """Return the namespace of the kubeconfig's (current or given) context, if it sets one.

    Raises:
        ExplainInputError: the kubeconfig cannot be read.

    """
    from kubernetes import config  # noqa: PLC0415 - the [explain] extra

    try:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as exc:
        raise ExplainInputError(f"cannot read the kubeconfig: {exc}") from None
    chosen = next((c for c in contexts or () if c.get("name") == context), None) if context else active
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else None


class _Reader:
    """The API calls, each recorded as the ``(verb, group, resource, namespace, name)`` RBAC sees."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        from kubernetes import client, config  # noqa: PLC0415 - the [explain] extra

        try:
            api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, persist_config=False
            )
        except (config.ConfigException, OSError, ValueError) as exc:
            raise ExplainInputError(f"cannot use the kubeconfig: {exc}") from None
        self.host = str(api.configuration.host)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.reads: list[Read] = []

    def _call(self, read: Read, call: Any, *, missing_ok: bool = False) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        self.reads.append(read)
        verb, _, resource, namespace, name = read
        what = f"{verb} {resource}{' ' + name if name else ''}{' in ' + namespace if namespace else ''}"
        try:
            response = call(_preload_content=False, _request_timeout=_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404 and missing_ok:
                return None
            reason = f"{exc.status} {exc.reason}"
            if exc.status in (401, 403):
                raise ExplainInputError(
                    f"the Kubernetes API refused to let you {what} ({reason}): explain reads only your team's "
                    "namespace and its own ClusterQueue; check -n and your kubeconfig context"
                ) from None
            raise ExplainInputError(f"cannot {what}: the Kubernetes API answered {reason}") from None
        except HTTPError as exc:
            raise ExplainInputError(f"cannot reach the Kubernetes API at {self.host}: {exc}") from None
        try:
            data = json.loads(response.data)
        except ValueError:
            raise ExplainInputError(f"cannot {what}: the API's answer is not JSON") from None
        return data if isinstance(data, dict) else None

    def list_workloads(self, namespace: str) -> list[dict[str, Any]]:
        data = self._call(
            ("list", KUEUE_GROUP, "workloads", namespace, ""),
            lambda **kw: self.custom.list_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads", **kw
            ),
        )
        return [i for i in (data or {}).get("items") or () if isinstance(i, dict)]

    def cluster_queue(self, name: str) -> dict[str, Any] | None:
        return self._call(
            ("get", KUEUE_GROUP, "clusterqueues", None, name),
            lambda **kw: self.custom.get_cluster_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name, **kw
            ),
            missing_ok=True,
        )

    def events(self, namespace: str, involved: str) -> list[dict[str, Any]]:
        data = self._call(
            ("list", "", "events", namespace, ""),
            lambda **kw: self.core.list_namespaced_event(
                namespace, field_selector=f"involvedObject.name={involved}", **kw
            ),
        )
        return [i for i in (data or {}).get("items") or () if isinstance(i, dict)]

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        data = self._call(
            ("list", "", "pods", namespace, ""),
            lambda **kw: self.core.list_namespaced_pod(namespace, **kw),
        )
        return [i for i in (data or {}).get("items") or () if isinstance(i, dict)]


def _with_kinds(items: list[dict[str, Any]], kind: str, api_version: str) -> list[dict[str, Any]]:
    """List items as the API returns them carry no ``kind``; give them theirs (as ``kubectl -o json`` does)."""
    return [{"kind": kind, "apiVersion": api_version, **i} for i in items]


def read_live(
    *,
    namespace: str,
    asked: str | None,
    denials: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
) -> Objects:
    """Read the objects around the Workload ``asked`` (its name or its job's) in the team namespace ``namespace``.

    Raises:
        ExplainInputError: the kubeconfig cannot be used, the API cannot be reached or refuses a read.

    """
    reader = _Reader(kubeconfig, context)
    team = namespace.removeprefix(names.NAMESPACE_PREFIX)
    workloads = _with_kinds(reader.list_workloads(namespace), "Workload", f"{KUEUE_GROUP}/{KUEUE_VERSION}")
    workload = select_workload(workloads, asked)
    cluster_queue = reader.cluster_queue(names.cluster_queue(team))
    involved = sorted(
        {
            n
            for n in (
                asked,
                *((workload or {}).get("metadata", {}).get("name"),),
                *owner_names(workload or {}),
            )
            if n
        }
    )
    events: list[dict[str, Any]] = []
    for name in involved:
        events += _with_kinds(reader.events(namespace, name), "Event", "v1")
    pods = _with_kinds(reader.pods(namespace), "Pod", "v1") if workload is not None else []
    return Objects(
        namespace=namespace,
        workload=workload,
        cluster_queue=cluster_queue,
        workloads=tuple(workloads),
        events=tuple(events),
        pods=tuple(pods),
        denials=denials,
        asked=asked,
        reads=tuple(reader.reads),
    )
