"""The admission case table (``tests/support/admission_cases.py``) judged offline by the CEL engine, both
fairness backends; ``tests/test_cluster_admission.py`` sends the same table to the real API server."""

from __future__ import annotations

import admission_cases as ac
import pytest
import tenant_admission as ta
from synth import Synth


def test_every_case_is_judged_as_expected_offline(synth: Synth) -> None:
    table = ac.cases()
    verdicts = [ac.offline(synth, case) for case in table]
    assert ac.disagreements(table, ta.on_kueue(synth), verdicts, verdicts, worded="offline") == []


def test_a_flipped_expectation_is_reported(synth: Synth) -> None:
    table = ac.cases()
    verdicts = [ac.offline(synth, case) for case in table]
    flipped = [ac.Verdict(not v.allowed, v.messages) for v in verdicts]
    found = ac.disagreements(table, ta.on_kueue(synth), verdicts, flipped, worded="offline")
    assert len(found) == len(table), found
    assert all("real" in line and "vs offline" in line for line in found)


@pytest.mark.parametrize("identity", [ac.MEMBER, ac.MPI_OPERATOR], ids=["member", "operator"])
def test_the_identities_are_as_eks_and_the_controllers_send_them(identity: dict[str, object]) -> None:
    assert identity in [c.identity for c in ac.cases()]
