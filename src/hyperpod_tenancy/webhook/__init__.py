"""The POSIX identity admission webhook: every pod in a team namespace runs as its submitter's UID and team GID.

* :mod:`~hyperpod_tenancy.webhook.config`: the configuration file (``--teams FILE``) and its parser.
* :mod:`~hyperpod_tenancy.webhook.identity`: who sent a request (``request.userInfo``) and which person that is.
* :mod:`~hyperpod_tenancy.webhook.uids`: one UID per person platform-wide, allocated in DynamoDB.
* :mod:`~hyperpod_tenancy.webhook.patch`: the JSONPatch that stamps the identity on a workload.
* :mod:`~hyperpod_tenancy.webhook.admission`: the AdmissionReview decision (CREATE and UPDATE rules).
* :mod:`~hyperpod_tenancy.webhook.server`: the HTTPS server (``hyperpod-tenancy webhook serve``).

The package imports no CDK code (it runs in the cluster); see ``docs/posix-identity-server.md``.
"""
