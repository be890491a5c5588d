"""What CDK's kubectl patch handler does to a live object, offline.

The handler (aws/aws-cdk ``packages/@aws-cdk/custom-resource-handlers/lib/aws-eks-v2/kubectl-handler/patch/__init__.py``)
runs ``kubectl patch <ResourceName> -p <patch> --type <PatchType>`` with ``ApplyPatchJson`` on ``Create`` *and*
``Update`` and with ``RestorePatchJson`` on ``Delete``; the previous patch is never undone. For maps, a strategic
merge patch (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/) merges key
by key: a key the patch leaves out is kept, ``null`` deletes it, a nested map is merged recursively. Only maps are
modelled (labels and annotations are maps); lists and ``$patch`` directives raise, so a test cannot silently rely on
semantics this module does not implement.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any


def strategic_merge(live: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``live`` with ``patch`` applied as a strategic merge of maps."""
    out = copy.deepcopy(dict(live))
    for key, value in patch.items():
        if key.startswith("$"):
            raise NotImplementedError(f"strategic-merge directive {key!r} is not modelled")
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            current = out.get(key)
            out[key] = strategic_merge(current if isinstance(current, Mapping) else {}, value)
        elif isinstance(value, list):
            raise NotImplementedError(f"list merge of {key!r} is not modelled")
        else:
            out[key] = value
    return out


def cdk_patch_handler(
    live: Mapping[str, Any], request_type: str, properties: Mapping[str, Any]
) -> dict[str, Any]:
    """Apply one CloudFormation request of a ``Custom::AWSCDK-EKS-KubernetesPatch`` to ``live``.

    ``properties`` are the resource's template properties (``ApplyPatchJson``, ``RestorePatchJson``, ``PatchType``),
    as CloudFormation passes them to the handler.
    """
    if properties["PatchType"] != "strategic":
        raise NotImplementedError(f"patch type {properties['PatchType']!r} is not modelled")
    if request_type in ("Create", "Update"):
        patch = properties["ApplyPatchJson"]
    elif request_type == "Delete":
        patch = properties["RestorePatchJson"]
    else:
        raise ValueError(f"invalid request type {request_type}")
    return strategic_merge(live, json.loads(patch))
