from __future__ import annotations

from typing import Iterator, List, Literal, Optional

from .._operations import Resource, operation
from .._wire import AuthorizationEndpoint, FundingBalance, FundingMovement, FundingStatementPage

Currency = Literal["EUR", "USDT"]


class Funding(Resource):
    """The merchant's funding accounts: top-ups draw from them; the program's operator credits them."""

    @operation("merchantBalance", "read")
    def balance(self, currency: Optional[Currency] = None) -> List[FundingBalance]:
        """What each funding account holds, in major units: every card currency, or only ``currency``.
        A top-up larger than the balance raises a ``ConflictError`` with code ``2726``.

        >>> [eur] = client.funding.balance("EUR")  # doctest: +SKIP
        >>> eur["available"]  # doctest: +SKIP
        """
        return self._call("merchantBalance", {"currency": currency})["balances"]

    @operation("merchantFundingList", "read")
    def statement_page(
        self, *, currency: Currency, after: Optional[int] = None, max_size: Optional[int] = None
    ) -> FundingStatementPage:
        """One page of the funding statement: the movements after the one numbered ``after`` (0: from
        the first), oldest first, each with the balance after it; ``next`` is the ``after`` of the next
        page, ``None`` at the last movement so far.

        >>> client.funding.statement_page(currency="EUR", after=0, max_size=100)["next"]  # doctest: +SKIP
        """
        return self._call("merchantFundingList", {"currency": currency, "after": after, "maxSize": max_size})

    def statement(self, *, currency: Currency, after: int = 0, page_size: int = 100) -> Iterator[FundingMovement]:
        """Every movement of the funding account in ``currency``, oldest first, fetched a page at a
        time as you iterate. Each carries the balance after it; start from ``after`` (a movement's
        ``seq``) to read only what came since.

        >>> for m in client.funding.statement(currency="EUR"):  # doctest: +SKIP
        ...     print(m["seq"], m["kind"], m["amount"], m["balance"])
        """
        size = min(100, max(1, page_size))

        def walk() -> Iterator[FundingMovement]:
            position: Optional[int] = after
            while position is not None:
                page = self.statement_page(currency=currency, after=position, max_size=size)
                yield from page["movements"]
                position = page["next"]

        return walk()


class AuthorizationEndpointSettings(Resource):
    """The merchant's real-time authorization endpoint (docs/transactions.md, "Authorization decisions")."""

    @operation("authorizationEndpointQuery", "read")
    def get(self) -> AuthorizationEndpoint:
        """The endpoint's settings as they are now.

        >>> client.authorization_endpoint.get()["timeoutMs"]  # doctest: +SKIP
        """
        return self._call("authorizationEndpointQuery", {})

    @operation("authorizationEndpointUpdate", "write")
    def update(
        self,
        *,
        authorization_url: Optional[str],
        timeout_ms: Optional[int] = None,
        default_decision: Optional[Literal["approve", "decline"]] = None,
        random_str: Optional[str] = None,
    ) -> AuthorizationEndpoint:
        """Sets where each authorization the program approves is sent for your decision, how long your
        endpoint may take (100 to 5000 ms, default 2000) and what applies when it does not answer in
        time or readably (default ``decline``). ``authorization_url=None`` removes it; a setting left
        out keeps its value. Answer the requests with ``client.webhooks.authorization_request`` and
        ``Webhooks.decide``.

        >>> client.authorization_endpoint.update(authorization_url="https://acme.example/authorize", timeout_ms=1500)  # doctest: +SKIP
        """
        return self._call(
            "authorizationEndpointUpdate",
            {
                "authorizationUrl": authorization_url,
                "timeoutMs": timeout_ms,
                "defaultDecision": default_decision,
                "randomStr": random_str,
            },
            # null removes the endpoint: it is sent (and, as every null, not signed).
            keep_none=("authorizationUrl",),
        )
