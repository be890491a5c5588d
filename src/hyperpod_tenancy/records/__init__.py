"""Every record the platform stores for another component to read: one class each, used by writer and reader.

=========================================  ===========================  ================================  ========
record                                     written by                   read by                           class
=========================================  ===========================  ================================  ========
POSIX identity team record (SSM)           each team stack              the POSIX identity webhook        :class:`PosixTeamRecord`
chargeback team record (SSM)               each team stack              the monthly chargeback job        :class:`~hyperpod_tenancy.chargeback.model.TeamConfig`
chargeback configuration (Lambda asset)    the chargeback stack         the monthly chargeback job        :class:`~hyperpod_tenancy.chargeback.model.ChargebackConfig`
drift-audit record (SSM)                   each team stack              the daily drift audit             :class:`~hyperpod_tenancy.runtime.drift_audit.TeamExpectation`
Kubernetes drift-audit record (SSM)        each team stack              the daily drift audit             :class:`~hyperpod_tenancy.runtime.kube_drift.KubeExpectation`
=========================================  ===========================  ================================  ========

The chargeback and drift-audit classes live in the modules their Lambda functions ship (the chargeback engine
and the runtime handlers, which import nothing else of the library); this package names them so a reader finds
every record in one place (the drift-audit classes are not imported here: the POSIX identity webhook, which
reads its record through this package, loads no Lambda handler). Each record carries a version; a record of another version is refused with the fix
(deploy the writer and the reader with the same library version).
"""

from hyperpod_tenancy.chargeback.model import ChargebackConfig, TeamConfig
from hyperpod_tenancy.records.posix_identity import IDENTITY_CENTER, PosixTeamRecord, RecordVersionError

__all__ = [
    "IDENTITY_CENTER",
    "ChargebackConfig",
    "PosixTeamRecord",
    "RecordVersionError",
    "TeamConfig",
]
