"""One UID per person, platform-wide, allocated on first sight in DynamoDB and never shared.

Item layout of the table (partition key ``pk``, String, no sort key):

=====================  =========================================  ==============================================
``pk``                 attributes                                 meaning
=====================  =========================================  ==============================================
``person#<key>``       ``uid`` (N), ``allocatedAt`` (S, ISO 8601)  the person's UID (``<key>`` e.g. ``sso:alice``)
``uid#<n>``            ``person`` (S)                             UID ``n`` is taken, and by whom
``counter#uid``        ``next`` (N)                               the lowest UID not handed out by the counter
=====================  =========================================  ==============================================

Allocation (:meth:`UidTable.uid_for`): a consistent read of ``person#<key>``; when absent, a consistent read of
the counter (candidate ``n = next``, or the range's first UID), then one ``TransactWriteItems`` that puts
``person#<key>`` (condition: absent), puts ``uid#<n>`` (condition: absent) and advances the counter from the
value read (condition: unchanged). DynamoDB applies all three or none, so:

* two replicas racing for the *same* person: one transaction wins; the other fails its ``person#`` condition
  and reads the winner's UID (one UID per person);
* two replicas racing for *different* people: both read the same ``next``; one wins, the other fails the
  counter condition and retries with the new value (two people never share a UID: ``uid#<n>`` exists once);
* a counter behind the ``uid#`` items (restored or edited by hand): the ``uid#`` condition fails alone and the
  candidate moves up.

Retries are bounded (:data:`MAX_ATTEMPTS`, with jittered back-off); the range's end is a clear error. Every
DynamoDB failure (unreachable, throttled, access denied) is a :class:`UidStoreUnavailable` whose message the
webhook returns as its denial. The IAM actions needed on the table: ``dynamodb:GetItem``,
``dynamodb:PutItem`` and ``dynamodb:UpdateItem`` (``TransactWriteItems`` is authorized per contained action;
``dynamodb:ConditionCheckItem`` is not used).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "COUNTER_KEY",
    "MAX_ATTEMPTS",
    "UidCache",
    "UidRangeExhausted",
    "UidStoreUnavailable",
    "UidTable",
    "dynamodb_client",
    "person_key",
    "uid_key",
]

LOG = logging.getLogger(__name__)

#: ``pk`` of the allocation counter item.
COUNTER_KEY = "counter#uid"
#: Transactions tried for one allocation before giving up (each contended attempt means another UID was
#: allocated meanwhile, so this bounds the first-sight burst one request can wait through).
MAX_ATTEMPTS = 64
#: botocore client settings: fail fast (the API server's webhook timeout is a few seconds) and retry once.
CLIENT_CONFIG = Config(connect_timeout=1.0, read_timeout=1.5, retries={"max_attempts": 2, "mode": "standard"})


class UidStoreUnavailable(Exception):  # noqa: N818 - the name says what the caller meets
    """DynamoDB did not answer (or refused); the message names the table and the cause."""


class UidRangeExhausted(Exception):  # noqa: N818
    """Every UID of the configured range is allocated."""


def person_key(person: str) -> str:
    """``pk`` of a person's item: ``person#<key>``."""
    return f"person#{person}"


def uid_key(uid: int) -> str:
    """``pk`` of a UID's item: ``uid#<n>``."""
    return f"uid#{uid}"


def dynamodb_client() -> DynamoDBClient:
    """Return a DynamoDB client from boto3's default session (region, credentials, ``AWS_ENDPOINT_URL`` from the environment)."""
    return boto3.client("dynamodb", config=CLIENT_CONFIG)


class UidTable:
    """The person → UID map in one DynamoDB table (see the module docstring for the layout and the protocol).

    Args:
        table: the table name.
        first: first UID of the range (inclusive).
        last: last UID of the range (inclusive).
        client: a DynamoDB client (default :func:`dynamodb_client`).
        allocation_delay_seconds: sleep between the reads and the conditional write of an allocation. For tests
            only: it widens the race window so concurrent first requests really overlap.

    """

    def __init__(
        self,
        *,
        table: str,
        first: int,
        last: int,
        client: DynamoDBClient | None = None,
        allocation_delay_seconds: float = 0.0,
    ) -> None:
        self.table = table
        self.first = first
        self.last = last
        self._client = client if client is not None else dynamodb_client()
        self._delay = allocation_delay_seconds

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                raise
            error = exc.response.get("Error", {})
            raise UidStoreUnavailable(
                f"DynamoDB table {self.table!r} refused {what}: {error.get('Code')}: {error.get('Message')}"
            ) from exc
        except BotoCoreError as exc:
            raise UidStoreUnavailable(
                f"DynamoDB table {self.table!r} is unreachable ({what}): {exc}"
            ) from exc

    def _get(self, pk: str) -> dict[str, Any] | None:
        response = self._call(
            f"GetItem {pk}",
            lambda: self._client.get_item(TableName=self.table, Key={"pk": {"S": pk}}, ConsistentRead=True),
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def ping(self) -> None:
        """Read the counter item once (raises :class:`UidStoreUnavailable` when DynamoDB does not answer)."""
        self._get(COUNTER_KEY)

    def lookup(self, person: str) -> int | None:
        """Return the person's UID, or None if they have none yet (a strongly consistent read)."""
        item = self._get(person_key(person))
        return int(item["uid"]["N"]) if item is not None else None

    def uid_for(self, person: str) -> int:
        """Return the person's UID, allocating the next free one on first sight.

        Raises:
            UidStoreUnavailable: DynamoDB did not answer or refused.
            UidRangeExhausted: no UID of the range is left.

        """
        skip = 0
        for attempt in range(MAX_ATTEMPTS):
            existing = self.lookup(person)
            if existing is not None:
                return existing
            counter = self._get(COUNTER_KEY)
            seen = int(counter["next"]["N"]) if counter is not None else None
            candidate = max(seen if seen is not None else self.first, self.first) + skip
            if candidate > self.last:
                raise UidRangeExhausted(
                    f"every UID of {self.first}..{self.last} is allocated (table {self.table!r}); widen uidRange."
                )
            if self._delay:
                time.sleep(self._delay)
            outcome = self._try_allocate(person, candidate, seen)
            if outcome == "won":
                return candidate
            LOG.info(
                {
                    "message": "UID allocation lost a race; reading again",
                    "outcome": outcome,
                    "candidate": candidate,
                }
            )
            skip = skip + 1 if outcome == "uid-taken" else 0
            time.sleep(random.uniform(0, min(0.05, 0.002 * 2**attempt)))  # noqa: S311 - jitter, not a secret
        raise UidStoreUnavailable(
            f"could not allocate a UID for {person!r} in {MAX_ATTEMPTS} attempts (table {self.table!r} is "
            "heavily contended); try again."
        )

    def _try_allocate(self, person: str, candidate: int, seen: int | None) -> str:
        """One allocation transaction: ``won``, ``person-exists``, ``uid-taken`` or ``contended``."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        counter_put: dict[str, Any] = {
            "TableName": self.table,
            "Item": {"pk": {"S": COUNTER_KEY}, "next": {"N": str(candidate + 1)}},
        }
        if seen is None:
            counter_put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            counter_put["ConditionExpression"] = "#next = :seen"
            counter_put["ExpressionAttributeNames"] = {"#next": "next"}
            counter_put["ExpressionAttributeValues"] = {":seen": {"N": str(seen)}}
        items: list[Any] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {
                        "pk": {"S": person_key(person)},
                        "uid": {"N": str(candidate)},
                        "allocatedAt": {"S": now},
                    },
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
                "Put": {
                    "TableName": self.table,
                    "Item": {"pk": {"S": uid_key(candidate)}, "person": {"S": person}},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": counter_put},
        ]
        try:
            self._call(
                f"TransactWriteItems for {person_key(person)}",
                lambda: self._client.transact_write_items(TransactItems=items),
            )
        except ClientError as exc:
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            if reasons[:1] == ["ConditionalCheckFailed"]:
                return "person-exists"
            if len(reasons) == 3 and reasons[1] == "ConditionalCheckFailed" and reasons[2] == "None":
                return "uid-taken"
            return "contended"
        return "won"


class UidCache:
    """Person → UID in memory for ``ttl_seconds`` (UIDs never change, so a hit is always right)."""

    def __init__(self, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl_seconds
        self._clock = clock
        self._items: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def get(self, person: str) -> int | None:
        """Return the cached UID, or None (absent or expired)."""
        hit = self._items.get(person)
        if hit is None or hit[1] <= self._clock():
            return None
        return hit[0]

    def put(self, person: str, uid: int) -> None:
        """Remember ``uid`` for ``ttl_seconds``."""
        if self._ttl > 0:
            with self._lock:
                self._items[person] = (uid, self._clock() + self._ttl)
