"""The team checkpoint scanner: run for real on a scratch tree against a Kubernetes API over a real TLS socket.

* The scanner (:mod:`hyperpod_tenancy.runtime.checkpoint_scanner`) walks a directory tree made here (symbolic
  links, a FIFO, future modification times, a huge and a deep tree, ``..``), lists Workloads from and patches them
  on a local HTTPS server that applies the JSON merge patch it receives (RFC 7386) and keeps every request.
* As a non-root UID with the team GID as its only group (a subprocess), against a directory it cannot read.
* Its Kubernetes objects: strict schema validation, the CronJob's shape, the Role evaluated with the offline RBAC
  authorizer (get/list/patch on the team's Workloads, nothing else anywhere), and the team's own Role that
  cannot write Workloads (so no tenant can set the annotation the collector trusts).
"""

from __future__ import annotations

import ast
import datetime as dt
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate
import platforms
import pytest
from kube_api_server import ServedOnThread, answer_json
from rbac_eval import Authorizer, Subject
from webhook_server import Certificates, certificates

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import (
    CHECKPOINT_SCAN_DEADLINE_SECONDS,
    CHECKPOINT_SCANNER_IMAGE,
    NOBODY_UID,
    SYSTEM_NAMESPACE,
    checkpoint_scanner,
    fsx_root_pod_spec,
    team_manifests,
)
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.runtime import checkpoint_scanner as scanner

TOKEN = "scanner-token"
ACCOUNT = "111122223333"
TEAM = "team-a"
NAMESPACE = f"{names.NAMESPACE_PREFIX}{TEAM}"
LAST = labels.LAST_CHECKPOINT_ANNOTATION
_WORKLOADS = re.compile(r"^/apis/kueue\.x-k8s\.io/v1beta2/namespaces/([^/]+)/workloads(?:/([^/]+))?$")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what the API server applies for ``application/merge-patch+json``)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class WorkloadApi(ServedOnThread):
    """Kueue Workloads of namespaces over TLS: paged lists, merge-patched one by one, every request kept."""

    def __init__(self, certs: Certificates, *, page: int = 2) -> None:
        #: ``(namespace, name)`` -> Workload.
        self.workloads: dict[tuple[str, str], dict[str, Any]] = {}
        #: ``(method, path, content type, body)`` of every request.
        self.requests: list[tuple[str, str, str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _route(self) -> re.Match[str] | None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length)) if length else None
                outer.requests.append((self.command, self.path, self.headers.get("Content-Type", ""), body))
                self._body = body
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    answer_json(self, 401, {"kind": "Status", "code": 401})
                    return None
                match = _WORKLOADS.match(urllib.parse.urlsplit(self.path).path)
                if match is None:
                    answer_json(self, 404, {"kind": "Status", "code": 404})
                return match

            def do_GET(self) -> None:
                match = self._route()
                if match is None:
                    return
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                start = int(query.get("continue", ["0"])[0])
                items = [w for (ns, _), w in sorted(outer.workloads.items()) if ns == match[1]]
                more = start + page < len(items)
                answer_json(
                    self,
                    200,
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "kind": "WorkloadList",
                        "metadata": {"continue": str(start + page)} if more else {},
                        "items": items[start : start + page],
                    },
                )

            def do_PATCH(self) -> None:
                match = self._route()
                if match is None:
                    return
                key = (match[1], urllib.parse.unquote(match[2] or ""))
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    answer_json(self, 415, {"kind": "Status", "code": 415})
                elif key not in outer.workloads:
                    answer_json(self, 404, {"kind": "Status", "code": 404})
                else:
                    outer.workloads[key] = merge_patch(outer.workloads[key], self._body)
                    answer_json(self, 200, outer.workloads[key])

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certs.cert, certs.key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https"

    def patches(self) -> list[tuple[str, str, Any]]:
        """``(path, content type, body)`` of every PATCH."""
        return [(path, ctype, body) for method, path, ctype, body in self.requests if method == "PATCH"]


def workload(
    name: str,
    *,
    path: str | None = None,
    admitted: bool = True,
    annotations: dict[str, str] | None = None,
    env: list[dict[str, str]] | None = None,
    mounts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Workload of one pod set whose template's container declares ``path`` (the directory variable, below
    its mount of the team claim at ``/fsx/<team>``) or sets ``env`` with ``mounts``."""
    if path is not None:
        env = [*(env or []), {"name": labels.CHECKPOINT_DIR_ENV, "value": path}]
        mounts = mounts or [{"name": "data", "mountPath": f"{names.FSX_ROOT}{TEAM}"}]
    container: dict[str, Any] = {"name": "train", "image": "train:1"}
    if env:
        container["env"] = env
    if mounts:
        container["volumeMounts"] = mounts
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": dict(annotations or {})},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "metadata": {"annotations": {}},
                        "spec": {
                            "containers": [container],
                            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "fsx"}}],
                        },
                    },
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "Admitted",
                    "status": "True" if admitted else "False",
                    "reason": "Admitted",
                    "lastTransitionTime": "2026-07-01T00:00:00Z",
                }
            ]
        },
    }


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return certificates(tmp_path_factory.mktemp("scanner-certs"))


@pytest.fixture
def api(certs: Certificates) -> Iterator[WorkloadApi]:
    with WorkloadApi(certs) as server:
        yield server


@pytest.fixture
def fsx(tmp_path: Path) -> Path:
    """``<tmp>/fsx`` with ``team-a`` (empty) and ``team-b`` (a newer file the scanner must never see)."""
    root = tmp_path / "fsx"
    (root / TEAM).mkdir(parents=True)
    (root / "team-b" / "secret").mkdir(parents=True)
    future = root / "team-b" / "secret" / "model.pt"
    future.write_text("b")
    _touch(future, "2026-07-01T03:00:00Z")
    return root


def _touch(path: Path, when: str) -> None:
    moment = dt.datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
    os.utime(path, (moment, moment), follow_symlinks=False)


def _env(api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    return {
        "NAMESPACE": NAMESPACE,
        "TEAM_DIRECTORY": str(fsx / TEAM),
        "FSX_ROOT": names.FSX_ROOT,
        "CLAIM_NAME": "fsx",
        "DIR_ENV": labels.CHECKPOINT_DIR_ENV,
        "LAST_CHECKPOINT_ANNOTATION": LAST,
        "KUBERNETES_API": api.url,
        "TOKEN_FILE": str(token),
        "CA_FILE": str(certs.ca),
        **extra,
    }


def _run(env: dict[str, str]) -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    code = scanner.main(env, out=out, err=err)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def _tree(fsx: Path) -> Path:
    """``team-a/ckpt`` with ``step-1`` (01:00) and ``step-2`` (01:40, the newest), directories dated 01:00."""
    ckpt = fsx / TEAM / "ckpt"
    for step, when in (("step-1", "2026-07-01T01:00:00Z"), ("step-2", "2026-07-01T01:40:00Z")):
        (ckpt / step).mkdir(parents=True)
        (ckpt / step / "model.pt").write_text(step)
        _touch(ckpt / step / "model.pt", when)
    for directory in (ckpt / "step-1", ckpt / "step-2", ckpt):
        _touch(directory, "2026-07-01T01:00:00Z")
    return ckpt


# ---------------------------------------------------------------------- the scan, end to end
def test_the_newest_write_is_one_merge_patch_of_one_annotation(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    _tree(fsx)
    for name in ("train", "queued", "undeclared"):
        declared = None if name == "undeclared" else f"/fsx/{TEAM}/ckpt/"
        api.workloads[(NAMESPACE, name)] = workload(name, path=declared, admitted=name != "queued")
    api.workloads[("hyperpod-ns-team-b", "other")] = workload("other", path="/fsx/team-b/secret")
    code, lines, err = _run(_env(api, certs, fsx, tmp_path))
    assert (code, err) == (0, "")
    # exactly one PATCH: a merge patch of the one annotation, on the admitted workload that declares a path
    assert api.patches() == [
        (
            f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads/train",
            "application/merge-patch+json",
            {"metadata": {"annotations": {LAST: "2026-07-01T01:40:00Z"}}},
        )
    ]
    assert api.workloads[(NAMESPACE, "train")]["metadata"]["annotations"] == {LAST: "2026-07-01T01:40:00Z"}
    # only the team namespace was listed, in pages
    listed = [p for m, p, _, _ in api.requests if m == "GET"]
    assert all(
        p.startswith(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads?") for p in listed
    )
    assert len(listed) == 2 and "continue=2" in listed[1]
    report, summary = lines
    assert report["workload"] == "train" and report["annotated"] == "2026-07-01T01:40:00Z"
    assert report["directories"][0]["entries"] == 4 and report["directories"][0]["skipped"] == {}
    assert summary["summary"] == {"namespace": NAMESPACE, "scanned": 1, "annotated": 1, "refused": 0}
    # a second run with nothing new writes nothing
    code, _, _ = _run(_env(api, certs, fsx, tmp_path))
    assert code == 0 and len(api.patches()) == 1


def test_symbolic_links_are_never_followed(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    ckpt = _tree(fsx)
    # a link inside the checkpoint directory to another team's newer file and directory
    (ckpt / "peek").symlink_to(fsx / "team-b" / "secret")
    (ckpt / "peek-file").symlink_to(fsx / "team-b" / "secret" / "model.pt")
    _touch(ckpt / "peek", "2026-07-01T02:30:00Z")  # the link's own time is not a checkpoint either
    _touch(ckpt, "2026-07-01T01:00:00Z")
    # a declared path that is itself a link to the other team's directory
    (fsx / TEAM / "evil").symlink_to(fsx / "team-b" / "secret")
    api.workloads[(NAMESPACE, "train")] = workload("train", path=f"/fsx/{TEAM}/ckpt")
    api.workloads[(NAMESPACE, "linked")] = workload("linked", path=f"/fsx/{TEAM}/evil")
    api.workloads[(NAMESPACE, "through")] = workload("through", path=f"/fsx/{TEAM}/evil/deeper/")
    code, lines, _ = _run(_env(api, certs, fsx, tmp_path))
    assert code == 0
    by_name = {line["workload"]: line for line in lines if "workload" in line}
    assert by_name["train"]["directories"][0]["newest"] == "2026-07-01T01:40:00Z"
    assert by_name["train"]["directories"][0]["skipped"] == {"symlink-not-followed": 2}
    for name in ("linked", "through"):
        assert (
            by_name[name]["directories"][0]["refused"]
            == "a symbolic link on the declared path (not followed)"
        )
        assert by_name[name]["directories"][0]["newest"] is None and "annotated" not in by_name[name]
    assert [body for _, _, body in api.patches()] == [
        {"metadata": {"annotations": {LAST: "2026-07-01T01:40:00Z"}}}
    ]


@pytest.mark.parametrize(
    "path",
    [
        f"/fsx/{TEAM}/../team-b/secret",
        f"/fsx/{TEAM}/ckpt/../../team-b",
        "/fsx/team-b/secret",
        "/fsx/",
        f"fsx/{TEAM}/ckpt",
        f"/fsx/{TEAM}-evil/ckpt",
    ],
)
def test_a_path_outside_the_team_directory_is_refused(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path, path: str
) -> None:
    _tree(fsx)
    (fsx / f"{TEAM}-evil" / "ckpt").mkdir(parents=True)
    api.workloads[(NAMESPACE, "w")] = workload("w", path=path)
    code, lines, _ = _run(_env(api, certs, fsx, tmp_path))
    assert code == 0 and api.patches() == []
    assert lines[0]["directories"] == [
        {
            "path": None,
            "newest": None,
            "entries": 0,
            "skipped": {},
            "refused": "the declared path is outside the team directory",
        }
    ]
    assert lines[1]["summary"]["refused"] == 1


def test_a_path_that_comes_back_into_the_team_directory_is_normalised(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    _tree(fsx)
    api.workloads[(NAMESPACE, "w")] = workload("w", path=f"/fsx/{TEAM}/x/../ckpt/./")
    assert _run(_env(api, certs, fsx, tmp_path))[0] == 0
    assert api.workloads[(NAMESPACE, "w")]["metadata"]["annotations"] == {LAST: "2026-07-01T01:40:00Z"}


def test_an_annotation_on_the_pod_template_declares_no_directory(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    """The container environment is the one declaration: a pod template's annotation (refused by admission) is
    not read, so nothing is scanned for it."""
    _tree(fsx)
    annotated = workload("w")
    annotated["spec"]["podSets"][0]["template"]["metadata"]["annotations"] = {
        labels.CHECKPOINT_PATH_ANNOTATION: f"/fsx/{TEAM}/ckpt/"
    }
    api.workloads[(NAMESPACE, "w")] = annotated
    assert _run(_env(api, certs, fsx, tmp_path))[0] == 0
    assert api.workloads[(NAMESPACE, "w")]["metadata"]["annotations"] == {}


def test_an_environment_declaration_is_mapped_through_the_claim_mount(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    """``HYPERPOD_TENANCY_CHECKPOINT_DIR`` is a container path below the claim's mount (``subPath`` too)."""
    _tree(fsx)
    env = [{"name": labels.CHECKPOINT_DIR_ENV, "value": "/data/step-2"}]
    api.workloads[(NAMESPACE, "plain")] = workload(
        "plain", env=env, mounts=[{"name": "data", "mountPath": "/data/"}]
    )
    api.workloads[(NAMESPACE, "sub")] = workload(
        "sub", env=env, mounts=[{"name": "data", "mountPath": "/data", "subPath": "ckpt"}]
    )
    api.workloads[(NAMESPACE, "escape")] = workload(
        "escape", env=env, mounts=[{"name": "data", "mountPath": "/data", "subPath": "../team-b"}]
    )
    api.workloads[(NAMESPACE, "unmounted")] = workload("unmounted", env=env)
    code, lines, _ = _run(_env(api, certs, fsx, tmp_path))
    assert code == 0
    by_name = {line["workload"]: line["directories"][0] for line in lines if "workload" in line}
    assert by_name["plain"]["refused"] == "the declared directory does not exist (yet)"
    assert by_name["sub"]["path"] == str(fsx / TEAM / "ckpt" / "step-2")
    assert by_name["sub"]["newest"] == "2026-07-01T01:40:00Z"
    assert (
        by_name["escape"]["refused"]
        == by_name["unmounted"]["refused"]
        == ("the declared path is outside the team directory")
    )
    assert [p.rsplit("/", 1)[1] for p, _, _ in api.patches()] == ["sub"]


def test_a_fifo_is_skipped_and_never_opened(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    ckpt = _tree(fsx)
    os.mkfifo(ckpt / "pipe")  # opening it for reading would block the scan forever
    _touch(ckpt / "pipe", "2026-07-01T02:50:00Z")
    _touch(ckpt, "2026-07-01T01:00:00Z")
    api.workloads[(NAMESPACE, "w")] = workload("w", path=f"/fsx/{TEAM}/ckpt")
    code, lines, _ = _run(_env(api, certs, fsx, tmp_path))
    assert code == 0
    assert lines[0]["directories"][0]["skipped"] == {"special-file": 1}
    assert api.workloads[(NAMESPACE, "w")]["metadata"]["annotations"] == {LAST: "2026-07-01T01:40:00Z"}


def test_a_future_modification_time_is_capped_at_now(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    ckpt = _tree(fsx)
    _touch(ckpt / "step-2" / "model.pt", "2099-01-01T00:00:00Z")
    api.workloads[(NAMESPACE, "w")] = workload("w", path=f"/fsx/{TEAM}/ckpt")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    code, lines, _ = _run(_env(api, certs, fsx, tmp_path))
    after = dt.datetime.now(dt.UTC)
    assert code == 0
    written = api.workloads[(NAMESPACE, "w")]["metadata"]["annotations"][LAST]
    assert before <= dt.datetime.fromisoformat(written.replace("Z", "+00:00")) <= after
    assert written == lines[-1]["at"]  # the scan's start, the "now" every time is capped at
    assert lines[0]["directories"][0]["skipped"] == {"future-mtime-capped": 1}


def test_the_walk_is_bounded_by_entries_and_depth(tmp_path: Path) -> None:
    team = tmp_path / TEAM
    wide = team / "wide"
    wide.mkdir(parents=True)
    for i in range(50):
        (wide / f"shard-{i:02}").write_text("x")
    now = dt.datetime.now(dt.UTC)
    capped = scanner.newest_write(str(team), "wide", now=now, max_entries=10)
    assert capped.entries == 10 and capped.skipped == {"entry-limit": 1} and capped.refused is None
    deep = team / "deep"
    level = deep
    for i in range(5):
        level = level / f"l{i}"
        level.mkdir(parents=True)
        _touch(level, "2026-07-01T00:00:00Z")
    (level / "model.pt").write_text("x")
    _touch(level / "model.pt", "2026-07-01T05:00:00Z")
    for parent in [level, *level.parents][:6]:
        _touch(parent, "2026-07-01T00:00:00Z")
    shallow = scanner.newest_write(str(team), "deep", now=now, max_depth=2)
    assert shallow.skipped == {"depth-limit": 1} and shallow.newest == dt.datetime(2026, 7, 1, tzinfo=dt.UTC)
    full = scanner.newest_write(str(team), "deep", now=now)
    assert full.skipped == {} and full.newest == dt.datetime(2026, 7, 1, 5, tzinfo=dt.UTC)


def test_a_wide_tree_holds_few_descriptors_and_a_declared_fifo_is_refused(tmp_path: Path) -> None:
    """200 sibling directories walked with 32 descriptors allowed; a FIFO as the declared path never blocks."""
    team = tmp_path / TEAM
    for i in range(200):
        (team / "wide" / f"rank-{i:03}").mkdir(parents=True)
        (team / "wide" / f"rank-{i:03}" / "shard.pt").write_text("x")
    os.mkfifo(team / "pipe")
    program = (
        "import datetime as dt, json, resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))\n"
        "import checkpoint_scanner as s\n"
        "now = dt.datetime.now(dt.UTC)\n"
        f"wide = s.newest_write({str(team)!r}, 'wide', now=now)\n"
        f"pipe = s.newest_write({str(team)!r}, 'pipe', now=now)\n"
        "print(json.dumps([wide.entries, wide.skipped, pipe.refused]))\n"
    )
    # the scanner module alone on the import path, as the CronJob runs it
    done = subprocess.run(
        [sys.executable, "-s", "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(scanner.__file__).parent)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [400, {}, "the declared path is not a directory"]


def test_a_missing_setting_or_token_is_named(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert scanner.main({"NAMESPACE": NAMESPACE}, out=out, err=err) == 2
    assert "set TEAM_DIRECTORY, FSX_ROOT" in err.getvalue() and "Traceback" not in err.getvalue()
    required = ("NAMESPACE", "TEAM_DIRECTORY", "FSX_ROOT", "CLAIM_NAME", "DIR_ENV")
    env = dict.fromkeys((*required, "LAST_CHECKPOINT_ANNOTATION"), "x")
    err = io.StringIO()
    assert scanner.main({**env, "MAX_ENTRIES": "lots"}, out=out, err=err) == 2
    assert "MAX_ENTRIES is 'lots'; give a positive integer" in err.getvalue()
    err = io.StringIO()
    assert scanner.main({**env, "TOKEN_FILE": str(tmp_path / "none")}, out=out, err=err) == 2
    assert "automountServiceAccountToken: true" in err.getvalue()


def test_an_api_that_refuses_the_token_fails_the_run(
    api: WorkloadApi, certs: Certificates, fsx: Path, tmp_path: Path
) -> None:
    env = _env(api, certs, fsx, tmp_path)
    Path(env["TOKEN_FILE"]).write_text("wrong")
    code, _, err = _run(env)
    assert code == 1 and "the Kubernetes API failed: HTTP Error 401" in err


# ---------------------------------------------------------------------- as a non-root UID
def _interpreter_for_nobody() -> str:
    """A Python 3.11+ every user may run (the test venv's may live under a private home)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            check = subprocess.run(
                [candidate, "-c", "import sys; assert sys.version_info >= (3, 11)"],
                user=NOBODY_UID,
                capture_output=True,
                check=False,
            )
        except OSError:  # not there, or not executable by that user
            continue
        if check.returncode == 0:
            return candidate
    raise AssertionError("no Python 3.11+ that UID 65534 may run: install python3 under /usr/bin")


def test_as_nobody_in_the_team_group_an_unreadable_directory_is_reported(certs: Certificates) -> None:
    """The pod's identity: UID 65534 whose only group is the team GID; the team directory ``3770`` of it."""
    gid = 4242
    base = Path(tempfile.mkdtemp(prefix="scanner-nobody-"))
    try:
        base.chmod(0o755)
        fsx = base / "fsx"
        ckpt = _tree(fsx)
        (fsx / "team-b" / "secret").mkdir(parents=True)
        (fsx / "team-b").chmod(0o3770)  # another team's directory: not this group's
        (ckpt / "private").mkdir()
        (ckpt / "private" / "model.pt").write_text("x")
        _touch(ckpt / "private", "2026-07-01T00:30:00Z")
        (ckpt / "private").chmod(0o700)  # owned by root: the team group cannot read it
        for path in (fsx / TEAM, ckpt, ckpt / "step-1", ckpt / "step-2"):
            os.chown(path, 0, gid)
        (fsx / TEAM).chmod(0o3770)
        _touch(ckpt, "2026-07-01T01:00:00Z")
        script = base / "checkpoint_scanner.py"
        shutil.copy(scanner.__file__, script)
        shutil.copy(certs.ca, base / "ca.pem")
        (base / "token").write_text(TOKEN)
        for path in (script, base / "ca.pem", base / "token"):
            path.chmod(0o644)
        with WorkloadApi(certs) as api:
            api.workloads[(NAMESPACE, "w")] = workload("w", path=f"/fsx/{TEAM}/ckpt")
            api.workloads[(NAMESPACE, "x")] = workload("x", path="/fsx/team-b/secret")
            # the token and CA copies the unprivileged scanner can read
            env = _env(api, certs, fsx, base, TOKEN_FILE=str(base / "token"), CA_FILE=str(base / "ca.pem"))
            if os.geteuid() == 0:
                command = [_interpreter_for_nobody(), "-I", str(script)]
                ids: dict[str, Any] = {"user": NOBODY_UID, "group": gid, "extra_groups": []}
            else:  # already unprivileged: the directory's mode alone keeps it out
                command, ids = [sys.executable, "-I", str(script)], {}
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, **ids)
            assert done.returncode == 0, done.stderr
            report, outside, summary = (json.loads(line) for line in done.stdout.splitlines())
            assert report["workload"] == "w"
            assert report["directories"][0]["skipped"] == {"unreadable": 1}
            assert report["annotated"] == "2026-07-01T01:40:00Z"
            assert outside["directories"][0]["refused"] == "the declared path is outside the team directory"
            assert summary["summary"]["annotated"] == 1 and "Traceback" not in done.stderr
            # and the kernel agrees: as that user, the other team's directory cannot even be listed
            if os.geteuid() == 0:
                peek = subprocess.run(
                    [command[0], "-c", f"import os; os.listdir({str(fsx / 'team-b')!r})"],
                    capture_output=True,
                    text=True,
                    check=False,
                    **ids,
                )
                assert "PermissionError" in peek.stderr
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------------- its Kubernetes objects
@pytest.fixture(scope="module", params=sorted(platforms.TENANT_PLATFORMS))
def platform(request: pytest.FixtureRequest) -> Platform:
    return platforms.TENANT_PLATFORMS[request.param]()


def test_the_objects_are_valid_kubernetes_strict(platform: Platform) -> None:
    for team in platform.teams:
        objects = checkpoint_scanner(team)
        assert [o["kind"] for o in objects] == [
            "ServiceAccount",
            "ConfigMap",
            "Role",
            "RoleBinding",
            "CronJob",
        ]
        for obj in objects:
            kubernetes_validate.validate(obj, f"{platform.cluster.kubernetes_version}.0", strict=True)


def test_the_cronjob_scans_every_five_minutes_read_only_as_the_team_group() -> None:
    platform = platforms.reference_platform()
    team = platform.teams[0]
    *_, cron = checkpoint_scanner(team)
    spec = cron["spec"]
    assert cron["metadata"]["namespace"] == SYSTEM_NAMESPACE
    assert spec["schedule"] == "*/5 * * * *" and spec["concurrencyPolicy"] == "Forbid"
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (1, 3)
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == CHECKPOINT_SCAN_DEADLINE_SECONDS < 300 and job["backoffLimit"] == 0
    pod = job["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == NOBODY_UID and pod["securityContext"]["runAsNonRoot"]
    assert pod["securityContext"]["runAsGroup"] == team.identity.posix_gid
    assert "supplementalGroups" not in pod["securityContext"] and "fsGroup" not in pod["securityContext"]
    assert pod["serviceAccountName"] == names.checkpoint_scanner(team.name)
    assert pod["automountServiceAccountToken"] is True
    (fsx_volume,) = [v for v in pod["volumes"] if v["name"] == "fsx-root"]
    assert fsx_volume["persistentVolumeClaim"] == {
        "claimName": names.fsx_root_claim(team.name),
        "readOnly": True,
    }
    (container,) = pod["containers"]
    assert all(m["readOnly"] for m in container["volumeMounts"])
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["TEAM_DIRECTORY"] == names.fsx_directory(team.name)
    assert env["NAMESPACE"] == names.namespace(team.name)
    assert env["LAST_CHECKPOINT_ANNOTATION"] == LAST
    # the read-only variant is the FSx root pod spec with only identity, token and mount mode changed
    root = fsx_root_pod_spec(team.name, container=container)
    assert {k: v for k, v in pod.items() if k not in ("serviceAccountName", "automountServiceAccountToken",
            "securityContext", "volumes")} == {
        k: v for k, v in root.items() if k not in ("automountServiceAccountToken", "securityContext", "volumes")
    }  # fmt: skip


def test_the_image_is_the_webhooks_base_and_the_script_is_the_module() -> None:
    dockerfile = Path(scanner.__file__).parents[1] / "webhook" / "Dockerfile"
    (base,) = re.findall(r"^FROM (\S+)", dockerfile.read_text(), re.MULTILINE)
    assert base == CHECKPOINT_SCANNER_IMAGE
    platform = platforms.reference_platform()
    _, config_map, *_ = checkpoint_scanner(platform.teams[0])
    source = Path(scanner.__file__).read_text()
    assert config_map["data"] == {"checkpoint_scanner.py": source}
    # it runs as a file in the stock image: the standard library only
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_team_chart_carries_the_scanner() -> None:
    platform = platforms.reference_platform()
    team = platform.teams[0]
    chart = TeamChart(platform, team, fsx=platforms.FSX, service_account="trainer")
    rendered = [(o["kind"], o["metadata"]["name"]) for o in chart.to_json()]
    assert [(o["kind"], o["metadata"]["name"]) for o in checkpoint_scanner(team)] == [
        r for r in rendered if r[1] == names.checkpoint_scanner(team.name)
    ]


_KINDS = (
    ("", "pods"), ("", "secrets"), ("", "configmaps"), ("", "namespaces"), ("batch", "jobs"),
    ("kueue.x-k8s.io", "workloads"), ("kueue.x-k8s.io", "workloads/status"), ("kueue.x-k8s.io", "localqueues"),
    ("kueue.x-k8s.io", "clusterqueues"), ("rbac.authorization.k8s.io", "roles"),
)  # fmt: skip
_VERBS = (
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
)


def test_the_scanner_may_get_list_and_patch_its_teams_workloads_and_nothing_else(platform: Platform) -> None:
    everything = [o for team in platform.teams for o in checkpoint_scanner(team)]
    everything += [o for team in platform.teams for o in team_manifests(platform, team, fsx=platforms.FSX)]
    rbac = Authorizer(everything)
    team, other = platform.teams[0], platform.teams[1]
    who = Subject(f"system:serviceaccount:{SYSTEM_NAMESPACE}:{names.checkpoint_scanner(team.name)}")
    granted = {
        (verb, group, resource, namespace)
        for namespace in (names.namespace(team.name), names.namespace(other.name), SYSTEM_NAMESPACE, None)
        for group, resource in _KINDS
        for verb in _VERBS
        if rbac.can(who, verb, resource, group=group, namespace=namespace)
    }
    ns = names.namespace(team.name)
    assert granted == {(v, "kueue.x-k8s.io", "workloads", ns) for v in ("get", "list", "patch")}


def test_no_team_member_can_write_a_workload_so_none_can_forge_the_annotation(platform: Platform) -> None:
    """The collector trusts ``last-checkpoint`` on the Workload's metadata only: tenants cannot write Workloads.

    Kueue v0.19.2 builds a Workload's annotations from the Job's ``provreq.kueue.x-k8s.io/`` ones only
    (``NewWorkload``, ``pkg/controller/jobframework/utils.go``; plus ``metrics.customLabels`` sources under the alpha
    ``CustomMetricLabels`` gate, off by default and not set by the platform), so an annotation on a Job never
    reaches its Workload's metadata; a pod template's does reach ``spec.podSets[].template``, which the
    collector never reads it from.
    """
    rbac = Authorizer(o for team in platform.teams for o in team_manifests(platform, team, fsx=platforms.FSX))
    for team in platform.teams:
        member = Subject(f"alice@{team.name}", (names.kubernetes_group(team.name),))
        ns = names.namespace(team.name)
        assert rbac.can(member, "list", "workloads", group="kueue.x-k8s.io", namespace=ns)
        for verb in ("create", "update", "patch", "delete"):
            for resource in ("workloads", "workloads/status"):
                assert not rbac.can(member, verb, resource, group="kueue.x-k8s.io", namespace=ns), (
                    verb,
                    team,
                )
