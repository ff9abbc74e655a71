from __future__ import annotations

from typing import Literal, Optional

from .._operations import Resource, operation
from .._wire import Card, CardTopUpResult, CardWithSpending, Controls, ControlsModel

Currency = Literal["EUR", "USDT"]


class Cards(Resource):
    """Virtual cards: issue, read, fund, freeze, close, spending controls."""

    @operation("cardApply", "write")
    def apply(
        self, *, holder_id: str, currency: Currency, controls: Optional[Controls] = None, random_str: Optional[str] = None
    ) -> Card:
        """Issues a virtual card to an approved cardholder, optionally with spending controls.

        >>> card = client.cards.apply(holder_id="hld_…", currency="EUR")  # doctest: +SKIP
        """
        return self._call("cardApply", {"holderId": holder_id, "currency": currency, "controls": controls, "randomStr": random_str})

    @operation("cardQuery", "read")
    def get(self, card_id: str) -> CardWithSpending:
        """A card with its balances (masked number), its spending controls, and what each spending limit
        that applies to it has left now.

        >>> for limit in client.cards.get("card_…")["spending"]:  # doctest: +SKIP
        ...     print(limit["interval"], limit["remaining"], "of", limit["amount"], "left")
        """
        return self._call("cardQuery", {"cardId": card_id})

    @operation("cardControlsUpdate", "write")
    def update_controls(
        self,
        *,
        controls: Controls,
        card_id: Optional[str] = None,
        holder_id: Optional[str] = None,
        random_str: Optional[str] = None,
    ) -> ControlsModel:
        """Replaces the spending controls of a card (``card_id``) or of a cardholder (``holder_id``: they
        apply to each of its cards that does not set the same rule). ``{}`` removes them. An
        authorization they refuse raises a ``ConflictError`` with code ``2728``; its ``decline`` says which rule.

        >>> client.cards.update_controls(card_id="card_…", controls={  # doctest: +SKIP
        ...     "spendingLimits": [{"amount": 200, "interval": "daily"}], "blockedMccs": ["7995"]})
        """
        if (card_id is None) == (holder_id is None):
            raise ValueError("give card_id or holder_id, not both")
        return self._call(
            "cardControlsUpdate", {"cardId": card_id, "holderId": holder_id, "controls": controls, "randomStr": random_str}
        )

    @operation("cardTopUp", "write")
    def top_up(self, *, card_id: str, amount: float, random_str: Optional[str] = None) -> CardTopUpResult:
        """Adds money to a card from your funding account, in major units of its currency (``12.5``,
        or a ``Decimal``); returns the top-up's transaction record (100). Pass your own ``random_str``
        to make a top-up idempotent across your own restarts, not only across the SDK's retries.

        >>> client.cards.top_up(card_id="card_…", amount=50)["tradeId"]  # doctest: +SKIP
        """
        return self._call("cardTopUp", {"cardId": card_id, "amount": amount, "randomStr": random_str})

    @operation("cardFreeze", "write")
    def freeze(self, *, card_id: str, reason: Optional[str] = None, random_str: Optional[str] = None) -> Card:
        """Freezes a card: its authorizations decline until it is unfrozen (it can still be topped up).
        Recorded as the merchant's freeze, with your ``reason`` (at most 200 characters).

        >>> client.cards.freeze(card_id="card_…", reason="reported lost")["status"]  # 'frozen'  # doctest: +SKIP
        """
        return self._call("cardFreeze", {"cardId": card_id, "reason": reason, "randomStr": random_str})

    @operation("cardUnfreeze", "write")
    def unfreeze(self, *, card_id: str, reason: Optional[str] = None, random_str: Optional[str] = None) -> Card:
        """Unfreezes a card that you or the cardholder froze. A card the operator froze raises a
        ``ConflictError`` with code ``2727``; a closed one ``2724``.

        >>> client.cards.unfreeze(card_id="card_…")  # doctest: +SKIP
        """
        return self._call("cardUnfreeze", {"cardId": card_id, "reason": reason, "randomStr": random_str})

    @operation("cardClose", "write")
    def close(self, *, card_id: str, reason: Optional[str] = None, random_str: Optional[str] = None) -> Card:
        """Closes a card for good; its available balance returns to your funding account.

        >>> client.cards.close(card_id="card_…", reason="customer left")["availableBalance"]  # 0  # doctest: +SKIP
        """
        return self._call("cardClose", {"cardId": card_id, "reason": reason, "randomStr": random_str})
