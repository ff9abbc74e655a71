"""The callbacks the service sends (docs/callbacks.md), one TypedDict per ``type``.

``client.webhooks.verify`` returns a :data:`CallbackEvent`; branch on ``event["type"]`` (a type
checker narrows the union by it). The records inside them are the generated ones (``_wire.py``).
"""

from __future__ import annotations

from typing import Literal, TypedDict, Union

from ._wire import Authorization, AuditStatusValue, CardStatus, CardStatusSource, DisputeStatus, TradeRecord


class EventBase(TypedDict):
    #: the same on every delivery attempt of one event: drop one you have handled
    eventId: str
    #: increases by one per subject (KYC request, cardholder, card, dispute): order by it
    sequence: int
    #: when the change was committed, ISO 8601
    occurredAt: str


class KycResultEvent(EventBase):
    """A KYC request went into review, or was approved or rejected (sent to the request's ``callbackUrl``)."""

    type: Literal["kyc.result"]
    requestNo: str
    email: str
    kycStatus: Literal["reviewing", "approved", "rejected"]
    reason: str
    holderId: "str | None"


class HolderAuditEvent(EventBase):
    """A cardholder's ``auditStatus`` changed."""

    type: Literal["holder.audit"]
    holderId: str
    auditStatus: AuditStatusValue
    errMsg: str


class _TradeEventRequired(TradeRecord, EventBase):
    type: Literal["trade"]
    cardId: str


class TradeEvent(_TradeEventRequired, total=False):
    """A transaction record was written or changed status."""

    #: on an authorization's record (tradeType 150) when it is written: the acceptor and the decision
    authorization: Authorization
    #: True on a forced post of the card network (posted though the rules would have refused it)
    forced: Literal[True]
    #: True on the Reversal record of a hold released because it was not cleared in its window
    holdExpired: Literal[True]


class AuthorizationDeclinedEvent(EventBase):
    """The program declined an authorization (not a listed trade: read it with ``trades.get(authorization["id"])``)."""

    type: Literal["authorization.declined"]
    authorization: Authorization


class CardStatusEvent(EventBase):
    """A card was frozen, unfrozen or closed."""

    type: Literal["card.status"]
    cardId: str
    cardNo: str
    currency: str
    status: CardStatus
    #: who set the status (None when the card became active)
    source: "CardStatusSource | None"
    reason: "str | None"
    #: deprecated: use ``source`` (``review`` is an operator freeze when a cardholder was rejected)
    actor: Literal["cardholder", "merchant", "operator", "review"]


class DisputeMovement(TypedDict):
    #: major units; negative: provisional credit taken back
    amount: float
    entryId: "str | None"


class DisputeUpdatedEvent(EventBase):
    """A dispute changed status, or moved money; its ``sequence`` is the dispute's own."""

    type: Literal["dispute.updated"]
    disputeId: str
    tradeId: str
    cardId: str
    status: DisputeStatus
    amount: float
    currency: str
    provisionalCredit: float
    outcomeAmount: "float | None"
    change: Literal["created", "submitted", "provisional_credit", "won", "lost", "credit_reversed", "expired", "withdrawn"]
    movement: "DisputeMovement | None"


CallbackEvent = Union[
    KycResultEvent, HolderAuditEvent, TradeEvent, AuthorizationDeclinedEvent, CardStatusEvent, DisputeUpdatedEvent
]
"""A callback the service sends (docs/callbacks.md)."""

#: Every callback ``type`` and its TypedDict.
EVENT_TYPES = {
    "kyc.result": KycResultEvent,
    "holder.audit": HolderAuditEvent,
    "trade": TradeEvent,
    "authorization.declined": AuthorizationDeclinedEvent,
    "card.status": CardStatusEvent,
    "dispute.updated": DisputeUpdatedEvent,
}
