"""In-cluster checkpoint scanner: the newest write under each running workload's checkpoint directory.

One scanner per team runs as a Kubernetes CronJob in the platform namespace every 5 minutes
(:func:`hyperpod_tenancy.k8s.team_manifests.checkpoint_scanner`). It mounts the file system read-only, as a
non-root user whose only group is the team's POSIX GID, and:

1. lists the Kueue ``Workload`` objects (``kueue.x-k8s.io/v1beta2``) of the team namespace and keeps those that
   are admitted (condition ``Admitted`` ``True``, not ``Finished``) and declare a checkpoint directory: the
   variable ``HYPERPOD_TENANCY_CHECKPOINT_DIR`` of a main container of a pod set's template (a path in the
   container, below a mount of the team claim ``fsx`` of that container, mapped back through the mount's
   ``subPath``). Kueue copies each pod template, containers and their environment included, into
   ``spec.podSets[].template`` (``pkg/controller/jobframework/utils.go`` ``NewWorkload``, kueue v0.19.2). The
   one reading of that declaration is :func:`declarations`, which the eviction collector uses too, and which
   reads the very variables the checkpoint admission policy bounds;
2. finds the newest modification time (``lstat``) of the directory and of everything below it, within the
   team directory only (:func:`newest_write`);
3. writes it to the Workload as the annotation ``hyperpod-tenancy.io/last-checkpoint`` (RFC 3339, UTC, to the
   second) with a JSON merge patch of that one annotation (``Content-Type: application/merge-patch+json``),
   only when the value changes.

What a tenant controls and what it cannot do with it is in the security model (``docs/security-model.md``,
"What the checkpoint scanner trusts"): the declared path is resolved inside the team directory, no link is
followed and no file opened, the walk is bounded, future times are capped, and one fixed annotation is written.

Every run prints one JSON line per workload (what it found and skipped) and a summary line. It exits 0 when every
Workload was handled (skips included), 1 when the Kubernetes API failed, 2 on a configuration error (named).

Environment (the CronJob sets it): ``NAMESPACE``, ``TEAM_DIRECTORY`` (``/fsx/<team>``), ``FSX_ROOT``
(``/fsx/``), ``CLAIM_NAME`` (``fsx``), ``DIR_ENV``, ``LAST_CHECKPOINT_ANNOTATION``,
optionally ``MAX_DEPTH``, ``MAX_ENTRIES``, ``KUBERNETES_API`` (default ``https://kubernetes.default.svc``),
``TOKEN_FILE`` and ``CA_FILE`` (default the service account's). Only the standard library is imported: the
module runs as a file in the stock Python image.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import posixpath
import ssl
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

#: The Workload API.
WORKLOAD_API = "/apis/kueue.x-k8s.io/v1beta2"
#: Levels below the checkpoint directory the walk enters (the directory itself is level 0).
DEFAULT_MAX_DEPTH = 6
#: Entries ``lstat``-ed per workload before the walk stops.
DEFAULT_MAX_ENTRIES = 20_000
#: The service account's token and CA, as kubelet mounts them.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_PAGE = 500
#: How every directory is opened: never through a symbolic link, never anything but a directory, never blocking
#: (a FIFO is refused with ``ENOTDIR`` before it could be opened), not inherited.
_OPEN_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class ConfigError(Exception):
    """The scanner's environment is incomplete or wrong (the message names the variable)."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What the scanner scans and writes (from the environment: :meth:`from_env`)."""

    #: The team namespace.
    namespace: str
    #: The team directory as the scanner sees it (``/fsx/<team>``).
    team_directory: str
    #: Where team directories live in workload paths (``/fsx/``).
    fsx_root: str
    #: The team's FSx claim (an environment declaration must be below a mount of it).
    claim_name: str
    #: The checkpoint directory container variable.
    dir_env: str
    #: The annotation the scanner writes.
    last_checkpoint_annotation: str
    max_depth: int = DEFAULT_MAX_DEPTH
    max_entries: int = DEFAULT_MAX_ENTRIES

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read the settings from ``env``.

        Raises:
            ConfigError: a variable is missing or not a positive integer.

        """
        required = (
            "NAMESPACE",
            "TEAM_DIRECTORY",
            "FSX_ROOT",
            "CLAIM_NAME",
            "DIR_ENV",
            "LAST_CHECKPOINT_ANNOTATION",
        )
        missing = [k for k in required if not env.get(k)]
        if missing:
            raise ConfigError(f"checkpoint scanner: set {', '.join(missing)} in the CronJob's environment")
        limits: dict[str, int] = {}
        for key, default in (("MAX_DEPTH", DEFAULT_MAX_DEPTH), ("MAX_ENTRIES", DEFAULT_MAX_ENTRIES)):
            text = env.get(key) or str(default)
            if not text.isdigit() or int(text) < 1:
                raise ConfigError(f"checkpoint scanner: {key} is {text!r}; give a positive integer")
            limits[key] = int(text)
        return cls(
            namespace=env["NAMESPACE"],
            team_directory=posixpath.normpath(env["TEAM_DIRECTORY"]),
            fsx_root=env["FSX_ROOT"],
            claim_name=env["CLAIM_NAME"],
            dir_env=env["DIR_ENV"],
            last_checkpoint_annotation=env["LAST_CHECKPOINT_ANNOTATION"],
            max_depth=limits["MAX_DEPTH"],
            max_entries=limits["MAX_ENTRIES"],
        )


@dataclass
class Scan:
    """The outcome of one walk: the newest modification time and what was skipped, by reason."""

    newest: dt.datetime | None = None
    entries: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    #: Why the declared directory was not scanned at all (``None``: it was).
    refused: str | None = None

    def skip(self, reason: str) -> None:
        """Count one skipped entry under ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def seen(self, mtime: float, now: dt.datetime) -> None:
        """Take one modification time into account, capped at ``now`` (counted as ``future-mtime-capped``)."""
        moment = dt.datetime.fromtimestamp(mtime, dt.UTC)
        if moment > now:
            self.skip("future-mtime-capped")
            moment = now
        if self.newest is None or moment > self.newest:
            self.newest = moment


# ---------------------------------------------------------------------- declarations
def _inside(team_directory: str, path: str) -> str | None:
    """``path`` relative to ``team_directory`` after normalisation (``""``: the directory), else ``None``."""
    normal = posixpath.normpath(path)
    if normal == team_directory:
        return ""
    if normal.startswith(team_directory.rstrip("/") + "/"):
        return normal[len(team_directory.rstrip("/")) + 1 :]
    return None


@dataclass(frozen=True)
class Declaration:
    """One main container's checkpoint declaration, as a Workload's pod set carries it."""

    #: The PodSpec of the pod set's template.
    spec: Mapping[str, Any]
    #: The declaring container.
    container: Mapping[str, Any]
    #: The literal value of the directory variable (a path in the container), ``None`` when not set literally.
    directory: str | None
    #: The literal value of the interval variable (``30m``), ``None`` when not set literally.
    interval: str | None


def declarations(
    workload: Mapping[str, Any], *, dir_env: str, interval_env: str | None = None
) -> list[Declaration]:
    """Return the checkpoint declarations of a Kueue Workload: the one place a checkpoint is declared.

    Each main container (``containers``; init and ephemeral containers do not train) of each pod set's template
    that sets ``dir_env`` or ``interval_env``, with the literal values it gives them (``valueFrom`` is invisible
    to admission, so it declares nothing). Annotations declare nothing, on the Workload or on a pod template.
    """
    found: list[Declaration] = []
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        spec = (pod_set.get("template") or {}).get("spec") or {}
        for container in spec.get("containers") or []:
            values: dict[str, str | None] = {}
            for env in container.get("env") or []:
                name = env.get("name")
                if name in (dir_env, interval_env) and name not in values:
                    value = env.get("value")
                    values[str(name)] = value if isinstance(value, str) and value else None
            if values:
                found.append(
                    Declaration(
                        spec=spec,
                        container=container,
                        directory=values.get(dir_env),
                        interval=values.get(interval_env) if interval_env else None,
                    )
                )
    return found


def declared_directories(workload: Mapping[str, Any], settings: Settings) -> list[str | None]:
    """Return the checkpoint directories a Workload's pod sets declare, relative to the team directory.

    ``None`` stands for a declaration outside the team directory (refused). Each is a path in its container,
    below a mount of the team claim there (its ``subPath`` included), so it is mapped through the mount.
    """
    found: list[str | None] = []
    for declared in declarations(workload, dir_env=settings.dir_env):
        if declared.directory is None:
            continue
        claims = {
            v.get("name"): v
            for v in declared.spec.get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName") == settings.claim_name
        }
        found.append(_through_mount(declared.directory, declared.container, claims))
    return found


def _through_mount(path: str, container: Mapping[str, Any], claims: Mapping[str, Any]) -> str | None:
    """Return a container path below a mount of the team claim relative to the team directory (else ``None``)."""
    for mount in container.get("volumeMounts") or []:
        if mount.get("name") not in claims or not isinstance(mount.get("mountPath"), str):
            continue
        below = _inside(posixpath.normpath(mount["mountPath"]), path) if path.startswith("/") else None
        if below is None:
            continue
        relative = posixpath.join(str(mount.get("subPath") or ""), below)
        normal = posixpath.normpath(relative) if relative else ""
        if normal in ("", "."):
            return ""
        if normal.startswith("/") or normal == ".." or normal.startswith("../"):
            return None
        return normal
    return None


# ---------------------------------------------------------------------- the walk
def newest_write(
    team_directory: str,
    relative: str,
    *,
    now: dt.datetime,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> Scan:
    """Return the newest ``lstat`` modification time of ``team_directory/relative`` and everything below it.

    Every path component is opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY``: a symbolic link
    anywhere on the declared path refuses the scan (``refused``), one below it is counted as skipped and never
    followed. Only directories are opened; other entries are ``lstat``-ed (``DirEntry.stat(follow_symlinks=
    False)``), regular files counted, FIFOs, sockets and devices skipped. Directories deeper than ``max_depth``
    are not entered (``depth-limit``), the walk stops after ``max_entries`` entries (``entry-limit``), a
    directory that cannot be read is skipped (``unreadable``).
    """
    scan = Scan()
    parts = [p for p in relative.split("/") if p]
    if any(p in (".", "..") for p in parts):
        scan.refused = "the path leaves the team directory"
        return scan
    try:
        fd = os.open(team_directory, _OPEN_DIRECTORY)
    except OSError as error:
        scan.refused = f"the team directory cannot be opened ({error.strerror})"
        return scan
    try:
        for part in parts:
            try:
                child = os.open(part, _OPEN_DIRECTORY, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, fd):
                    scan.refused = "a symbolic link on the declared path (not followed)"
                elif error.errno == errno.ENOTDIR:
                    scan.refused = "the declared path is not a directory"
                elif error.errno == errno.ENOENT:
                    scan.refused = "the declared directory does not exist (yet)"
                else:
                    scan.refused = f"the declared directory cannot be opened ({error.strerror})"
                return scan
            os.close(fd)
            fd = child
        scan.seen(os.fstat(fd).st_mtime, now)
        _walk(fd, 0, scan, now=now, max_depth=max_depth, max_entries=max_entries)
    finally:
        os.close(fd)
    return scan


def _is_link(name: str, directory: int) -> bool:
    """Whether ``name`` in the open ``directory`` is a symbolic link (``lstat``; ``False`` if it cannot be)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _walk(
    directory: int, level: int, scan: Scan, *, now: dt.datetime, max_depth: int, max_entries: int
) -> bool:
    """``lstat`` the entries of the open ``directory`` and walk its subdirectories; ``False`` at the entry limit.

    Depth first and recursive, so at most two descriptors per level are open (the directory and its listing),
    however wide the tree: ``max_depth`` bounds both the recursion and the descriptors.
    """
    try:
        # scandir duplicates a descriptor it is given and closes its duplicate (CPython os_scandir_impl)
        with os.scandir(directory) as entries:
            for entry in entries:
                if scan.entries >= max_entries:
                    scan.skip("entry-limit")
                    return False
                scan.entries += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    scan.skip("unreadable")
                    continue
                mode = info.st_mode
                if stat.S_ISLNK(mode):
                    scan.skip("symlink-not-followed")
                elif stat.S_ISREG(mode):
                    scan.seen(info.st_mtime, now)
                elif stat.S_ISDIR(mode):
                    scan.seen(info.st_mtime, now)
                    if level + 1 > max_depth:
                        scan.skip("depth-limit")
                        continue
                    try:
                        child = os.open(entry.name, _OPEN_DIRECTORY, dir_fd=directory)
                    except OSError:
                        scan.skip("unreadable")
                        continue
                    try:
                        if not _walk(
                            child, level + 1, scan, now=now, max_depth=max_depth, max_entries=max_entries
                        ):
                            return False
                    finally:
                        os.close(child)
                else:
                    scan.skip("special-file")
    except OSError:
        scan.skip("unreadable")
    return True


# ---------------------------------------------------------------------- Kubernetes
class KubeClient:
    """The few Kubernetes API calls of the scanner, with the pod's service account token."""

    def __init__(self, *, api: str, token: str, ca_file: str | None, timeout: float = 20) -> None:
        self.api = api.rstrip("/")
        self.token = token
        self.context = ssl.create_default_context(cafile=ca_file) if api.startswith("https") else None
        self.timeout = timeout

    def _call(
        self, method: str, path: str, *, body: bytes | None = None, content_type: str | None = None
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.api + path, data=body, method=method, headers=headers)
        with urllib.request.urlopen(request, context=self.context, timeout=self.timeout) as response:
            return json.load(response)

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        """Every Workload of ``namespace`` (all pages)."""
        items: list[dict[str, Any]] = []
        cont = ""
        base = f"{WORKLOAD_API}/namespaces/{urllib.parse.quote(namespace, safe='')}/workloads"
        while True:
            query = {"limit": str(_PAGE)} | ({"continue": cont} if cont else {})
            page = self._call("GET", f"{base}?{urllib.parse.urlencode(query)}")
            items += page.get("items") or []
            cont = str((page.get("metadata") or {}).get("continue") or "")
            if not cont:
                return items

    def annotate(self, namespace: str, name: str, *, key: str, value: str) -> None:
        """Set one annotation of a Workload with a JSON merge patch (RFC 7386) of that annotation only."""
        path = (
            f"{WORKLOAD_API}/namespaces/{urllib.parse.quote(namespace, safe='')}/workloads/"
            f"{urllib.parse.quote(name, safe='')}"
        )
        body = json.dumps({"metadata": {"annotations": {key: value}}}, separators=(",", ":")).encode()
        self._call("PATCH", path, body=body, content_type="application/merge-patch+json")


def _admitted(workload: Mapping[str, Any]) -> bool:
    conditions = {
        c.get("type"): c.get("status")
        for c in (workload.get("status") or {}).get("conditions") or []
        if isinstance(c, dict)
    }
    return conditions.get("Admitted") == "True" and conditions.get("Finished") != "True"


def rfc3339(moment: dt.datetime) -> str:
    """``2026-07-01T02:03:04Z``: UTC, to the second."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scan_workloads(
    client: KubeClient, settings: Settings, *, now: dt.datetime, out: TextIO
) -> dict[str, Any]:
    """Scan every admitted Workload of the namespace that declares a checkpoint directory; return the summary."""
    summary: dict[str, Any] = {"namespace": settings.namespace, "scanned": 0, "annotated": 0, "refused": 0}
    for workload in client.workloads(settings.namespace):
        metadata = workload.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if not _admitted(workload):
            continue
        declared = declared_directories(workload, settings)
        if not declared:
            continue
        summary["scanned"] += 1
        result = Scan()
        report: dict[str, Any] = {"workload": name, "directories": []}
        for relative in declared:
            if relative is None:
                scan = Scan(refused="the declared path is outside the team directory")
            else:
                scan = newest_write(
                    settings.team_directory,
                    relative,
                    now=now,
                    max_depth=settings.max_depth,
                    max_entries=settings.max_entries,
                )
            report["directories"].append(
                {
                    "path": None if relative is None else posixpath.join(settings.team_directory, relative),
                    "newest": None if scan.newest is None else rfc3339(scan.newest),
                    "entries": scan.entries,
                    "skipped": dict(sorted(scan.skipped.items())),
                    "refused": scan.refused,
                }
            )
            if scan.refused:
                summary["refused"] += 1
            if scan.newest is not None and (result.newest is None or scan.newest > result.newest):
                result.newest = scan.newest
        current = (metadata.get("annotations") or {}).get(settings.last_checkpoint_annotation)
        if result.newest is not None and rfc3339(result.newest) != current:
            client.annotate(
                settings.namespace,
                name,
                key=settings.last_checkpoint_annotation,
                value=rfc3339(result.newest),
            )
            summary["annotated"] += 1
            report["annotated"] = rfc3339(result.newest)
        out.write(json.dumps(report, sort_keys=True) + "\n")
    return summary


def main(env: Mapping[str, str] | None = None, *, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one scan (the CronJob's entry point); returns the exit status."""
    env = os.environ if env is None else env
    try:
        settings = Settings.from_env(env)
        token_file = env.get("TOKEN_FILE") or f"{SERVICE_ACCOUNT_DIR}/token"
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ConfigError(
                f"checkpoint scanner: cannot read the service account token {token_file} ({error.strerror}); "
                "the pod needs automountServiceAccountToken: true, or set TOKEN_FILE"
            ) from None
        client = KubeClient(
            api=env.get("KUBERNETES_API") or "https://kubernetes.default.svc",
            token=token,
            ca_file=env.get("CA_FILE") or f"{SERVICE_ACCOUNT_DIR}/ca.crt",
        )
    except ConfigError as error:
        err.write(f"{error}\n")
        return 2
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    try:
        summary = scan_workloads(client, settings, now=now, out=out)
    except (urllib.error.URLError, OSError, ValueError) as error:
        err.write(f"checkpoint scanner: the Kubernetes API failed: {error}\n")
        return 1
    out.write(json.dumps({"summary": summary, "at": rfc3339(now)}, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
