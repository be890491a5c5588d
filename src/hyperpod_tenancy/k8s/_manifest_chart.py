"""A cdk8s chart made of plain manifest dicts (the renderers' output), with explicit names only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import cdk8s
from constructs import Construct

from hyperpod_tenancy.errors import TenancyError

_TOP_LEVEL = ("apiVersion", "kind", "metadata")


def object_id(manifest: Mapping[str, Any]) -> str:
    """Construct ID of a manifest: ``<kind>-<namespace>-<name>`` (stable, unique per object)."""
    meta = manifest.get("metadata", {})
    parts = [manifest["kind"], meta.get("namespace", ""), meta["name"]]
    return "-".join(p for p in parts if p)


class ManifestChart(cdk8s.Chart):
    """A chart whose objects are given as manifest dicts.

    Names are always explicit (``disable_resource_name_hashes``): Kueue and the admission policies refer
    to objects by name, so generated names would break them.

    Raises:
        TenancyError: a manifest has no ``metadata.name`` or two manifests share kind, namespace and name.

    """

    def __init__(self, scope: Construct, id: str, *, manifests: Iterable[Mapping[str, Any]]) -> None:
        super().__init__(scope, id, disable_resource_name_hashes=True)
        seen: set[str] = set()
        for manifest in manifests:
            if not manifest.get("metadata", {}).get("name"):
                raise TenancyError(f"{id}: a {manifest.get('kind')} manifest has no metadata.name.")
            oid = object_id(manifest)
            if oid in seen:
                raise TenancyError(f"{id}: two manifests are both {oid}.")
            seen.add(oid)
            self._add(oid, manifest)

    def _add(self, oid: str, manifest: Mapping[str, Any]) -> cdk8s.ApiObject:
        meta = manifest["metadata"]
        obj = cdk8s.ApiObject(
            self,
            oid,
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=cdk8s.ApiObjectMetadata(
                name=meta["name"],
                namespace=meta.get("namespace"),
                labels=meta.get("labels"),
                annotations=meta.get("annotations"),
            ),
        )
        for key, value in manifest.items():
            if key not in _TOP_LEVEL:
                obj.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
        return obj
