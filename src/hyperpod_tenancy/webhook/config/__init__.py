"""The webhook's configuration file (``--teams FILE``): the team namespaces, their GIDs and who may submit there.

The construct renders it into a ConfigMap (``hyperpod_tenancy.k8s.posix_identity``); the server reads it once at
start. JSON, version 1::

    {
      "version": 1,
      "uidRange": {"first": 200000, "last": 299999},
      "cacheTtlSeconds": 300,
      "exemptUsernames": ["system:serviceaccount:kube-system:job-controller", ...],
      "home": {"mountPath": "/home/hyperpod", "claimName": "fsx"},
      "namespaces": {
        "hyperpod-ns-research": {
          "team": "research",
          "gid": 20001,
          "localQueue": "hyperpod-ns-research-localqueue",
          "principals": [
            {"kind": "identity-center", "roleNamePrefix": "AWSReservedSSO_Research_"},
            {"kind": "studio", "roleArn": "arn:aws:iam::111122223333:role/research-studio",
             "domainId": "d-xxxxxxxx"}
          ]
        }
      }
    }

Fields:

``version`` (required, ``1``)
    The format version; another value is refused so an old server never misreads a newer file.
``uidRange`` (required)
    ``first``..``last`` (inclusive) the UIDs are allocated from, ``1000 <= first <= last <= 2147483646``.
    Keep it away from the GIDs and from the UIDs images ship (0-999, 65534).
``cacheTtlSeconds`` (optional, default 300)
    How long a resolved person → UID stays in memory (0 disables the cache). A UID never changes once
    allocated, so the TTL only bounds how long a UID removed from the table by hand keeps being served.
``exemptUsernames`` (required)
    ``request.userInfo.username`` of the controllers whose requests are allowed unchanged:
    ``hyperpod_tenancy.k8s.workloads.controller_usernames()``. Exemption is by who sends a request, never by
    what the object says.
``home`` (required)
    ``claimName``: the team claim in every team namespace (its root is ``/fsx/<team>``); ``mountPath``
    (optional): must be ``hyperpod_tenancy.k8s.fsx_dirs.HOME_MOUNT_PATH`` if given (the one documented path).
``breakGlassGroups`` (optional, default none)
    Kubernetes groups whose members may exec, attach, port-forward, proxy or add an ephemeral container in any
    pod of a team namespace (the platform's on-call); every use is logged and recorded as an Event
    (:mod:`hyperpod_tenancy.webhook.connect`). ``system:`` groups are refused (they hold everyone).
``namespaces`` (required)
    Each team namespace: ``team`` (name), ``gid`` (the team's POSIX GID, ``1000..2147483646``, unique),
    ``localQueue`` (the LocalQueue a job without ``kueue.x-k8s.io/queue-name`` is sent to) and
    ``principals``: whose requests are resolved to a person there:

    * ``{"kind": "identity-center", "roleNamePrefix": "AWSReservedSSO_<PermissionSet>_"}``: the role Identity
      Center provisions for the team's permission set (``AWSReservedSSO_<PermissionSet>_<16 hex>``); the session
      name is the person's Identity Center user name, the person key ``sso:<user name>``.
    * ``{"kind": "studio", "roleArn": ..., "domainId": ...}``: the team's SageMaker Studio execution role. Its
      sessions do not name the person (see :mod:`hyperpod_tenancy.webhook.identity`), so requests from it are
      denied with an explanation; listing it makes the denial specific instead of "unknown role".

``supplementalGroupsPolicy`` (optional, default ``merge``)
    ``strict``: every pod template the webhook stamps or hardens gets ``securityContext.supplementalGroupsPolicy:
    Strict``; ``auto``: the same while every node reports ``status.features.supplementalGroupsPolicy: true``
    (:mod:`hyperpod_tenancy.webhook.node_features`), nothing otherwise; ``merge``: never.

``teamRecords`` (optional)
    ``{"ssmPath": "/hyperpod-tenancy/<cluster>/posix-identity/", "refreshSeconds": 60}``: more team namespaces,
    read at run time from the SSM parameters under ``ssmPath`` (``GetParametersByPath``, re-read every
    ``refreshSeconds``, default 60, 5..3600). Each team stack writes one such parameter, a *team record*: the
    fields of one ``namespaces`` entry plus ``namespace`` (:func:`parse_team_record`). So the configuration of
    the shared cluster lists no team, and a team added later is served within ``refreshSeconds`` of its stack's
    deployment. With ``teamRecords``, ``namespaces`` may be left out.

Unknown keys are refused (a typo must not silently drop a rule). Every problem is reported at once, each
naming its field (``namespaces.hyperpod-ns-research.gid``) and the fix.
"""

from __future__ import annotations

from hyperpod_tenancy.k8s.posix_identity import CONFIG_VERSION
from hyperpod_tenancy.webhook.config.load import load_config, parse_config, parse_team_record
from hyperpod_tenancy.webhook.config.types import (
    DEFAULT_CACHE_TTL_SECONDS,
    DEFAULT_REFRESH_SECONDS,
    ID_MAX,
    ID_MIN,
    SUPPLEMENTAL_GROUPS_POLICIES,
    IdentityCenterPrincipal,
    NamespaceConfig,
    Principal,
    StudioPrincipal,
    TeamRecords,
    WebhookConfig,
    WebhookConfigError,
)

__all__ = [
    "CONFIG_VERSION",
    "DEFAULT_CACHE_TTL_SECONDS",
    "DEFAULT_REFRESH_SECONDS",
    "ID_MAX",
    "ID_MIN",
    "SUPPLEMENTAL_GROUPS_POLICIES",
    "IdentityCenterPrincipal",
    "NamespaceConfig",
    "Principal",
    "StudioPrincipal",
    "TeamRecords",
    "WebhookConfig",
    "WebhookConfigError",
    "load_config",
    "parse_config",
    "parse_team_record",
]
