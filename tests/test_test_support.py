"""The test infrastructure keeps its shape: one fixture module for platforms, helpers found through pytest.

``tests/support/platforms.py`` is the one place test platforms are built from ``platform.yaml``; helpers in
``tests/support`` are imported through pytest's ``pythonpath`` setting, never by editing ``sys.path``.
"""

from __future__ import annotations

import re
import tomllib

from platforms import REPO

TESTS = REPO / "tests"
SUPPORT = TESTS / "support"
SELF = "tests/test_test_support.py"
#: Reading the reference policy file directly (rather than through ``platforms``).
READS_REFERENCE = re.compile(r"""/ "platform\.yaml"\)?\.read_text|yaml\.safe_load\(\s*\(?REPO""")
SYS_PATH_EDIT = re.compile(r"sys\.path\.(insert|append|extend)|sys\.path\s*[+]?=")


def _sources() -> dict[str, str]:
    return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("*.py"))}


def test_helpers_are_found_through_pytest_pythonpath_not_sys_path_edits() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["pythonpath"] == ["tests/support"]
    edits = [name for name, text in _sources().items() if SYS_PATH_EDIT.search(text)]
    assert edits == [], f"sys.path edited in {edits}: put helpers in tests/support instead"


def test_only_the_fixture_module_reads_the_reference_policy() -> None:
    readers = [
        name
        for name, text in _sources().items()
        if READS_REFERENCE.search(text) and name not in {"tests/support/platforms.py", SELF}
    ]
    assert readers == [], f"{readers} read platform.yaml directly: use platforms.reference_data()"
    # the pattern catches the old way (this control string is why this file is exempt)
    assert READS_REFERENCE.search('data = yaml.safe_load((REPO / "platform.yaml").read_text())')


def test_no_second_platform_module() -> None:
    assert not (SUPPORT / "tenant_platforms.py").exists()
    assert not (SUPPORT / "fairness_platforms.py").exists()
