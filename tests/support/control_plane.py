"""A real Kubernetes control plane on loopback for the tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, the Kueue manager and KWOK, built from their Go modules by ``make control-plane``.

It is what controller-runtime's envtest and Kueue's own ``test/integration`` run, plus the controllers those
leave out (ResourceQuota, Job and namespace controllers, the scheduler), so that what the platform renders is
judged by the real admission chain, the real RBAC authorizer and real Kueue:

* **etcd** on loopback (``--unsafe-no-fsync``: test data, nothing to keep).
* **kube-apiserver** with RBAC (``Node,RBAC`` as EKS runs it), loopback TLS from a test CA, a client
  certificate per component and person (:mod:`kube_pki`), service-account tokens signed by a test key.
* **kube-controller-manager** with every default controller, each under its own service account
  (``--use-service-account-credentials``, as EKS runs it: admission policies exempt controllers by that name).
* **kube-scheduler**, binding pods to **KWOK** nodes (:func:`kwok_node`) that carry the instance types'
  ``nvidia.com/gpu``, EFA, CPU and memory; KWOK's stages make the nodes Ready and the pods Running. KWOK stands
  in for the kubelets and acts with an administrator's certificate.
* **Kueue** from its release manifests (``kustomize build config/default`` of the module: CRDs with their
  conversion webhooks, webhook configurations, RBAC), its webhooks and conversion pointed at the manager on
  loopback with the test CA; the manager runs with its own service account's token, so its RBAC is the
  release's; internal certificate management and leader election are off (the release's are for a pod).

Every process writes its log under the work folder; :meth:`ControlPlane.log_tail` is printed when a test fails.
Processes get ``SIGKILL`` when the test process dies (``PR_SET_PDEATHSIG``), and are stopped when the context
closes. The binaries and manifests come from the variables the Makefile passes (:class:`Components`).
"""

from __future__ import annotations

import base64
import copy
import ctypes
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kube_client import KubeClient, documents, wait_until, write_kubeconfig
from kube_pki import CertificateAuthority, KeyPair, write_private_key

from hyperpod_tenancy.k8s.kueue import kueue_helm_values
from hyperpod_tenancy.policy import Platform

__all__ = ["DEPLOYED_KUBECONFIG", "Components", "ControlPlane", "kueue_configuration", "kwok_node"]

#: A kubeconfig of a deployed cluster for the non-destructive checks (docs/testing.md).
DEPLOYED_KUBECONFIG = "HYPERPOD_TENANCY_KUBECONFIG"

#: The variables ``make`` passes the tests (``tools/control-plane.mk``, ``CONTROL_PLANE_ENV``).
ENVIRONMENT = (
    "KUBE_BIN_DIR",
    "ETCD_BIN_DIR",
    "KUEUE_DIR",
    "KWOK_BIN_DIR",
    "OPERATOR_CRDS_DIR",
    "KUBERNETES_VERSION",
)
#: Kueue's namespace and service account in its release manifests.
KUEUE_NAMESPACE = "kueue-system"
KUEUE_SERVICE_ACCOUNT = "kueue-controller-manager"
#: The annotation KWOK manages nodes by (``--manage-nodes-with-annotation-selector``).
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
#: Where Kueue v0.19.2 reads its metrics server's certificate when its internal certificate management is off
#: (a fixed path: ``cmd/kueue/main.go``); written once per machine, with the CA that signed it.
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")
#: KWOK stages used: nodes initialized and kept Ready by heartbeats; pods created, Ready, completed, deleted.
KWOK_STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat/node-heartbeat.yaml", "pod/general")
#: Kinds of Kueue's release manifests that run the manager as a pod: the tests run it as a process instead.
_POD_ONLY_KINDS = frozenset({"Deployment", "Service", "Secret", "APIService", "ServiceMonitor"})


def kubectl_binary() -> str:
    """The kubectl ``make control-plane`` built (``KUBECTL``): the client team members use, at the server's version.

    Raises:
        RuntimeError: it is not set or not built (naming ``make control-plane``).

    """
    path = os.environ.get("KUBECTL")
    if not path or not Path(path).is_file():
        raise RuntimeError(
            "KUBECTL is not set or not built: run the tests through `make test` (or `make unit`), or set it as "
            "`make control-plane` prints it"
        )
    return path


@dataclass(frozen=True)
class Components:
    """Where ``make control-plane`` put the binaries and manifests (the Makefile passes each as a variable)."""

    kube_bin: Path
    etcd_bin: Path
    kueue_dir: Path
    kwok_bin: Path
    operator_crds: Path
    kubernetes_version: str

    @classmethod
    def from_environment(cls) -> Components:
        """Read :data:`ENVIRONMENT`; a missing variable or folder fails naming it and ``make control-plane``."""
        missing = [name for name in ENVIRONMENT if not os.environ.get(name)]
        if missing:
            raise RuntimeError(
                f"the control plane's {', '.join(missing)} not set: run the tests through `make test` (or `make "
                "unit`), or set them as `make control-plane` prints them"
            )
        env = os.environ
        found = cls(
            kube_bin=Path(env["KUBE_BIN_DIR"]),
            etcd_bin=Path(env["ETCD_BIN_DIR"]),
            kueue_dir=Path(env["KUEUE_DIR"]),
            kwok_bin=Path(env["KWOK_BIN_DIR"]),
            operator_crds=Path(env["OPERATOR_CRDS_DIR"]),
            kubernetes_version=env["KUBERNETES_VERSION"],
        )
        for folder in (found.kube_bin, found.etcd_bin, found.kueue_dir, found.kwok_bin, found.operator_crds):
            if not (folder / ".built").exists():
                raise RuntimeError(f"{folder} is not built: run `make control-plane`")
        return found


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


class ControlPlane:
    """The control plane, started by :meth:`start` (or the context manager) in ``workdir``.

    Args:
        workdir: a fresh folder for etcd's data, certificates, kubeconfigs and logs.
        components: the built binaries and manifests.
        kueue_configuration: Kueue's manager configuration (``config.kueue.x-k8s.io/v1beta2``), as the platform
            renders it; the addresses, certificates and leader election of a loopback process replace its own.
        service_cidr: the Service CIDR (``--service-cluster-ip-range``).

    """

    def __init__(
        self,
        workdir: Path,
        components: Components,
        *,
        kueue_configuration: Mapping[str, Any],
        service_cidr: str = "10.100.0.0/16",
    ) -> None:
        self.workdir = workdir
        self.components = components
        self.service_cidr = service_cidr
        self._kueue_configuration = dict(kueue_configuration)
        self._processes: list[_Process] = []
        self.pki = CertificateAuthority(workdir / "pki", name="control plane test CA")
        self.port = _free_port()
        #: ``https://127.0.0.1:<port>``.
        self.server = f"https://127.0.0.1:{self.port}"
        self.kueue_webhook_port = _free_port()
        self._admin_pair = self.pki.client("admin", user="test-admin", groups=["system:masters"])
        #: A client with every right (``system:masters``); :meth:`KubeClient.as_user` for anyone else.
        self.admin = KubeClient(self.server, self.pki.cert, (self._admin_pair.cert, self._admin_pair.key))

    # -------------------------------------------------------------------------------------------- life

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start_steps(self) -> list[tuple[str, Callable[[], None]]]:
        """The start, step by step (a benchmark times each): every component polled until it works."""
        return [
            ("etcd", self._start_etcd),
            ("kube-apiserver", self._start_apiserver),
            ("controllers+scheduler", self._start_controllers),
            ("kueue", self._start_kueue),
            ("kwok", self._start_kwok),
        ]

    def start(self) -> None:
        """Start every component in order, each polled until it works (no fixed sleeps)."""
        for _, step in self.start_steps():
            step()

    def processes(self) -> list[_Process]:
        """The running processes, in start order."""
        return list(self._processes)

    def stop(self) -> None:
        """SIGTERM every process (in reverse order), SIGKILL what is left after 10 s, and reap them all."""
        for process in reversed(self._processes):
            if process.popen.poll() is None:
                process.popen.send_signal(signal.SIGTERM)
        for process in reversed(self._processes):
            try:
                process.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
        self._processes.clear()

    def _spawn(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> _Process:
        log = self.workdir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            popen = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, no locks taken
            )
        process = _Process(name, popen, log)
        self._processes.append(process)
        return process

    def _alive(self) -> None:
        for process in self._processes:
            if process.popen.poll() is not None:
                raise RuntimeError(
                    f"{process.name} exited with {process.popen.returncode}:\n{self._tail(process.log, 40)}"
                )

    def _wait(self, check: Any, *, what: str, timeout: float = 90) -> Any:
        def probe() -> Any:
            self._alive()
            return check()

        return wait_until(probe, timeout=timeout, what=what, interval=0.2)

    @staticmethod
    def _tail(path: Path, lines: int) -> str:
        text = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(text[-lines:])

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` of every component's log, for a failing test's report."""
        logs = sorted((self.workdir / "logs").glob("*.log"))
        return "\n".join(f"--- {p.name} ---\n{self._tail(p, lines)}" for p in logs)

    # -------------------------------------------------------------------------------------- components

    def _start_etcd(self) -> None:
        client, peer = _free_port(), _free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn(
            "etcd",
            [
                str(self.components.etcd_bin / "etcd"),
                "--name=test",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        http = urllib3.PoolManager()
        self._wait(
            lambda: http.request("GET", f"{self.etcd_url}/health", retries=False).status == 200, what="etcd"
        )

    def _start_apiserver(self) -> None:
        serving = self.pki.server(
            "apiserver",
            common_name="kube-apiserver",
            names=("localhost", "127.0.0.1", "kubernetes.default.svc"),
        )
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key = self.workdir / "pki" / "sa.key"
        self.sa_pub = self.workdir / "pki" / "sa.pub"
        write_private_key(sa_key, self.sa_key)
        # the front proxy's identity (aggregated APIs; the components read its CA from the cluster at start)
        proxy = self.pki.client("front-proxy-client", user="front-proxy-client")
        self.sa_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        self._spawn(
            "kube-apiserver",
            [
                str(self.components.kube_bin / "kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.port}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={self.pki.cert}",
                f"--requestheader-client-ca-file={self.pki.cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={proxy.cert}",
                f"--proxy-client-key-file={proxy.key}",
                "--authorization-mode=Node,RBAC",
                "--anonymous-auth=false",
                "--allow-privileged=true",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.sa_pub}",
                f"--service-account-signing-key-file={self.sa_key}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                "--profiling=false",
                # the Service `kubernetes` cannot have a loopback endpoint; nothing in these tests uses it
                "--endpoint-reconciler-type=none",
            ],
        )
        self._wait(lambda: self.admin.request("GET", "/readyz").status == 200, what="kube-apiserver /readyz")
        # the bootstrap RBAC roles (system:kube-controller-manager, cluster-admin...) are there once reconciled
        self._wait(
            lambda: (
                self.admin.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin").ok
            ),
            what="the bootstrap ClusterRoles",
        )

    def kubeconfig(self, stem: str, *, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig of a client certificate for ``user`` in ``groups`` (a component or a person)."""
        pair = self.pki.client(stem, user=user, groups=groups)
        return self._kubeconfig_of(stem, pair)

    def _kubeconfig_of(self, stem: str, pair: KeyPair) -> Path:
        return write_kubeconfig(
            self.workdir / f"{stem}.kubeconfig",
            server=self.server,
            ca=self.pki.cert,
            cert=pair.cert,
            key=pair.key,
        )

    def _start_controllers(self) -> None:
        kcm = self.kubeconfig("kube-controller-manager", user="system:kube-controller-manager")
        self._spawn(
            "kube-controller-manager",
            [
                str(self.components.kube_bin / "kube-controller-manager"),
                f"--kubeconfig={kcm}",
                f"--authentication-kubeconfig={kcm}",
                f"--authorization-kubeconfig={kcm}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.sa_key}",
                f"--root-ca-file={self.pki.cert}",
                f"--cluster-signing-cert-file={self.pki.cert}",
                f"--cluster-signing-key-file={self.pki.key}",
                f"--service-cluster-ip-range={self.service_cidr}",
                "--bind-address=127.0.0.1",
                f"--secure-port={_free_port()}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
            ],
        )
        scheduler = self.kubeconfig("kube-scheduler", user="system:kube-scheduler")
        self._spawn(
            "kube-scheduler",
            [
                str(self.components.kube_bin / "kube-scheduler"),
                f"--kubeconfig={scheduler}",
                f"--authentication-kubeconfig={scheduler}",
                f"--authorization-kubeconfig={scheduler}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={_free_port()}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
            ],
        )
        # the service account controller works once the default namespace has its ServiceAccount
        self._wait(
            lambda: self.admin.request("GET", "/api/v1/namespaces/default/serviceaccounts/default").ok,
            what="kube-controller-manager (the default ServiceAccount)",
        )

    def service_account_token(self, namespace: str, name: str, *, seconds: int = 86400) -> str:
        """A token of the service account (the TokenRequest API, as a pod's projected token)."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        answer = self.admin.call("POST", path, body=body)
        return str(answer["status"]["token"])

    # ------------------------------------------------------------------------------------------- Kueue

    def kueue_manifests(self) -> list[dict[str, Any]]:
        """Kueue's release manifests with the webhooks and the CRDs' conversion pointed at the local manager."""
        ca_bundle = base64.b64encode(self.pki.cert.read_bytes()).decode()
        url = f"https://127.0.0.1:{self.kueue_webhook_port}"
        found: list[dict[str, Any]] = []
        for doc in documents(self.components.kueue_dir / "manifests.yaml"):
            if doc["kind"] in _POD_ONLY_KINDS:
                continue
            if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for hook in doc["webhooks"]:
                    path = hook["clientConfig"]["service"]["path"]
                    hook["clientConfig"] = {"url": url + path, "caBundle": ca_bundle}
            conversion = doc.get("spec", {}).get("conversion", {}).get("webhook")
            if doc["kind"] == "CustomResourceDefinition" and conversion:
                path = conversion["clientConfig"]["service"]["path"]
                conversion["clientConfig"] = {"url": url + path, "caBundle": ca_bundle}
            found.append(doc)
        return found

    def _start_kueue(self) -> None:
        manifests = self.kueue_manifests()
        for doc in manifests:
            answer = self.admin.apply(doc)
            assert answer.ok, (
                f"Kueue's {doc['kind']} {doc['metadata']['name']}: {answer.status} {answer.message}"
            )
        for doc in manifests:
            if doc["kind"] == "CustomResourceDefinition":
                self._wait_established(doc["metadata"]["name"])
        self.admin.forget_discovery()
        token = self.service_account_token(KUEUE_NAMESPACE, KUEUE_SERVICE_ACCOUNT)
        kubeconfig = write_kubeconfig(
            self.workdir / "kueue.kubeconfig", server=self.server, ca=self.pki.cert, token=token
        )
        serving = self.pki.server("kueue-webhook", common_name="kueue-webhook")
        certs = self.workdir / "kueue-certs"
        certs.mkdir()
        (certs / "tls.crt").write_bytes(serving.cert.read_bytes())
        (certs / "tls.key").write_bytes(serving.key.read_bytes())
        self._kueue_metrics_certificate()
        health = _free_port()
        config = copy.deepcopy(self._kueue_configuration)
        config.update(
            {
                "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
                "metrics": {**config.get("metrics", {}), "bindAddress": f"127.0.0.1:{_free_port()}"},
                "webhook": {"host": "127.0.0.1", "port": self.kueue_webhook_port, "certDir": str(certs)},
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
            }
        )
        config_path = self.workdir / "kueue-config.yaml"
        config_path.write_text(yaml.safe_dump(config))
        self._spawn(
            "kueue",
            [
                str(self.components.kueue_dir / "kueue"),
                f"--config={config_path}",
                "--zap-log-level=2",
                # the visibility API is an aggregated API server on a fixed port: two control planes on one
                # machine (pytest workers) would collide; nothing here reads it
                "--feature-gates=VisibilityOnDemand=false",
            ],
            env={"KUBECONFIG": str(kubeconfig)},
        )
        http = urllib3.PoolManager()
        self._wait(
            lambda: http.request("GET", f"http://127.0.0.1:{health}/readyz", retries=False).status == 200,
            what="Kueue /readyz",
        )
        # the webhooks answer through the API server: an invalid ClusterQueue is refused by Kueue's webhook
        invalid = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "control-plane-probe"},
            "spec": {
                "namespaceSelector": {},
                "cohortName": "x",
                "preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
            },
        }
        self._wait(
            lambda: "reclaimWithinCohort" in self.admin.create(invalid, dry_run=True).message,
            what="Kueue's webhook to refuse an invalid ClusterQueue",
        )

    def _kueue_metrics_certificate(self) -> None:
        if (KUEUE_METRICS_CERTS / "tls.key").exists():
            return
        # written whole in a folder beside it and renamed: another test process may be doing the same
        staging = KUEUE_METRICS_CERTS.with_name(f"{KUEUE_METRICS_CERTS.name}.{os.getpid()}")
        try:
            ca = CertificateAuthority(staging / ".ca", name="kueue metrics test CA", days=3650)
            pair = ca.server("metrics", common_name="kueue-metrics")
            (staging / "ca.crt").write_bytes(ca.cert.read_bytes())
            pair.cert.replace(staging / "tls.crt")
            pair.key.replace(staging / "tls.key")
            try:
                staging.rename(KUEUE_METRICS_CERTS)
            except OSError:  # the other process was first: its certificate serves as well
                shutil.rmtree(staging, ignore_errors=True)
        except PermissionError as error:
            raise RuntimeError(
                f"Kueue v0.19.2 reads its metrics certificate from {KUEUE_METRICS_CERTS} (fixed in its main.go when "
                "its internal certificate management is off): make that folder's parent writable for this user"
            ) from error

    def _wait_established(self, crd: str) -> None:
        def established() -> bool:
            body = self.admin.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
            return any(
                c["type"] == "Established" and c["status"] == "True"
                for c in body.get("status", {}).get("conditions", [])
            )

        self._wait(established, what=f"CRD {crd} established")

    def install_crds(self, crds: list[dict[str, Any]]) -> None:
        """Apply CustomResourceDefinitions and wait until each is established."""
        for crd in crds:
            answer = self.admin.apply(crd)
            assert answer.ok and not answer.warnings, (crd["metadata"]["name"], answer)
        for crd in crds:
            self._wait_established(crd["metadata"]["name"])
        self.admin.forget_discovery()

    # -------------------------------------------------------------------------------------------- KWOK

    def _start_kwok(self) -> None:
        stages = self.workdir / "kwok-stages.yaml"
        texts: list[str] = []
        root = self.components.kwok_bin / "stages"
        for entry in KWOK_STAGES:
            path = root / entry
            files = (
                [path]
                if path.is_file()
                else sorted(p for p in path.glob("*.yaml") if p.name != "kustomization.yaml")
            )
            texts += [f.read_text() for f in files]
        stages.write_text("\n---\n".join(texts))
        kubeconfig = self.kubeconfig("kwok", user="kwok-controller", groups=("system:masters",))
        self._spawn(
            "kwok",
            [
                str(self.components.kwok_bin / "kwok"),
                f"--kubeconfig={kubeconfig}",
                f"--config={stages}",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                "--node-ip=127.0.0.1",
                f"--server-address=127.0.0.1:{_free_port()}",
            ],
        )
        probe = kwok_node("control-plane-probe", capacity={"cpu": "1", "memory": "1Gi", "pods": "10"})
        assert self.admin.create(probe).ok

        def ready() -> bool:
            node = self.admin.get(probe) or {}
            return any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in node.get("status", {}).get("conditions", [])
            )

        self._wait(ready, what="KWOK to make a node Ready")
        self.admin.delete(probe)


def kwok_node(
    name: str,
    *,
    capacity: Mapping[str, str],
    labels: Mapping[str, str] | None = None,
    taints: list[Any] | None = None,
) -> dict[str, Any]:
    """A Node KWOK manages (Ready, pods Running) with ``capacity`` as both capacity and allocatable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                **(labels or {}),
            },
        },
        "spec": {"taints": taints or []},
        "status": {"capacity": dict(capacity), "allocatable": dict(capacity)},
    }


def kueue_configuration(platform: Platform) -> dict[str, Any]:
    """The Kueue manager configuration the ``kueue`` backend renders for ``platform`` (its Helm values' YAML)."""
    text = kueue_helm_values(platform)["managerConfig"]["controllerManagerConfigYaml"]
    config: dict[str, Any] = yaml.safe_load(text)
    return config
