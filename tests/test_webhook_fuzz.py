"""Arbitrary JSON sent to ``/mutate`` of a real server process: never a crash, never a 5xx.

Two kinds of bodies: any JSON value at all, and a valid AdmissionReview with one subtree replaced by arbitrary
JSON (so the fuzzing reaches the identity, UID and patch code rather than stopping at the envelope). Every
answer is 200 (an AdmissionReview response echoing the request UID) or 400 (with an error message), and the
server still answers a valid review afterwards.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webhook_server import (
    Certificates,
    WebhookProcess,
    certificates,
    create_table,
    kind_named,
    review,
    serial_moto_server,
    sso_user,
    webhook_config,
    workload,
)

from hyperpod_tenancy.k8s import workloads

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    directory = tmp_path_factory.mktemp("fuzz")
    certs: Certificates = certificates(directory)
    config = Path(directory / "teams.json")
    config.write_text(json.dumps(webhook_config()))
    with serial_moto_server(), WebhookProcess(certs=certs, table=create_table(), config_path=config) as proc:
        yield proc


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*prefix, i))
    return found


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@st.composite
def mutated_reviews(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(workloads.WORKLOAD_KINDS))
    operation = draw(st.sampled_from(["CREATE", "UPDATE"]))
    obj = workload(kind)
    doc = review(
        obj,
        user=sso_user("fuzz@example.com"),
        operation=operation,
        old=obj if operation == "UPDATE" else None,
    )
    paths = _paths(doc)
    return _replace(doc, draw(st.sampled_from(paths)), draw(JSON))


def _check(server: WebhookProcess, body: bytes) -> None:
    status, answer = server.client.request("POST", "/mutate", body)
    assert status in (200, 400), (status, answer)
    if status == 400:
        assert isinstance(answer["error"], str) and answer["error"]
    else:
        assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=JSON)
def test_any_json_body_gets_200_or_400(server: WebhookProcess, body: Any) -> None:
    _check(server, json.dumps(body).encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=mutated_reviews())
def test_a_review_with_any_subtree_replaced_gets_200_or_400(server: WebhookProcess, doc: Any) -> None:
    _check(server, json.dumps(doc).encode())


def test_the_server_still_serves_after_the_fuzzing(server: WebhookProcess) -> None:
    response = server.client.mutate(review(workload(kind_named("Job")), user=sso_user("after@example.com")))
    assert response["allowed"]
