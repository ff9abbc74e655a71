from __future__ import annotations

from typing import Iterator, List, Literal, Optional

from .._operations import UNSET, Resource, operation
from .._wire import TokenSettings, WalletToken, WalletTokenPage

WalletTokenStatus = Literal["pending", "active", "suspended", "deleted"]
TokenAuthMethod = Literal["otp_sms", "otp_email", "app"]


class Tokens(Resource):
    """Wallet tokens of your cards (docs/tokens.md): Apple Pay, Google Pay, Samsung Pay and cards on
    file. List them, suspend, resume or delete one, confirm a pending one in your app, and set how
    provisioning is decided. Another merchant's token is a ``NotFoundError`` (``2760``)."""

    @operation("tokenQuery", "read")
    def retrieve(self, token_id: str) -> WalletToken:
        """One token, with its device and status history.

        >>> client.tokens.retrieve("tok_…")["status"]  # doctest: +SKIP
        """
        return self._call("tokenQuery", {"tokenId": token_id})

    @operation("tokenList", "read")
    def page(
        self,
        *,
        start: int = 0,
        limit: Optional[int] = None,
        card_id: Optional[str] = None,
        status: Optional[WalletTokenStatus] = None,
    ) -> WalletTokenPage:
        """One page of your tokens, newest first.

        >>> client.tokens.page(card_id="card_…")["total"]  # doctest: +SKIP
        """
        return self._call("tokenList", {"start": start, "limit": limit, "cardId": card_id, "status": status})

    def list(
        self,
        *,
        card_id: Optional[str] = None,
        status: Optional[WalletTokenStatus] = None,
        page_size: int = 30,
    ) -> Iterator[WalletToken]:
        """Every token matching the filters, newest first: pages are fetched as you iterate.

        >>> for t in client.tokens.list(card_id="card_…", status="active"):  # doctest: +SKIP
        ...     print(t["tokenId"], t["walletProvider"], t["device"]["name"])
        """
        size = min(100, max(1, page_size))

        def walk() -> Iterator[WalletToken]:
            start = 0
            while True:
                page = self.page(card_id=card_id, status=status, start=start, limit=size)
                yield from page["tokens"]
                if len(page["tokens"]) < size or start + size >= page["total"]:
                    return
                start += size

        return walk()

    @operation("tokenSuspend", "write")
    def suspend(self, token_id: str, *, reason: Optional[str] = None, random_str: Optional[str] = None) -> WalletToken:
        """Suspends an active token: payments with it are declined until it is resumed.

        >>> client.tokens.suspend("tok_…", reason="phone reported lost")["status"]  # 'suspended'  # doctest: +SKIP
        """
        return self._call("tokenSuspend", {"tokenId": token_id, "reason": reason, "randomStr": random_str})

    @operation("tokenResume", "write")
    def resume(self, token_id: str, *, reason: Optional[str] = None, random_str: Optional[str] = None) -> WalletToken:
        """Resumes a suspended token (its card must be active; one the operator suspended is the operator's).

        >>> client.tokens.resume("tok_…")["status"]  # 'active'  # doctest: +SKIP
        """
        return self._call("tokenResume", {"tokenId": token_id, "reason": reason, "randomStr": random_str})

    @operation("tokenDelete", "write")
    def delete(self, token_id: str, *, reason: Optional[str] = None, random_str: Optional[str] = None) -> WalletToken:
        """Deletes a token for good.

        >>> client.tokens.delete("tok_…", reason="removed from the wallet")  # doctest: +SKIP
        """
        return self._call("tokenDelete", {"tokenId": token_id, "reason": reason, "randomStr": random_str})

    @operation("tokenActivate", "write")
    def activate(self, token_id: str, *, random_str: Optional[str] = None) -> WalletToken:
        """Activates a pending token whose step-up offered ``app``: the cardholder confirmed it in your app.

        >>> client.tokens.activate("tok_…")["status"]  # 'active'  # doctest: +SKIP
        """
        return self._call("tokenActivate", {"tokenId": token_id, "randomStr": random_str})

    @operation("tokenSettingsUpdate", "write")
    def settings_update(
        self,
        *,
        decision_url: Optional[str] = UNSET,
        methods: Optional[List[TokenAuthMethod]] = UNSET,
        random_str: Optional[str] = None,
    ) -> TokenSettings:
        """Changes the settings you pass, and only those: the token decision endpoint (``None`` removes
        it: the built-in rules decide) and the step-up methods offered (``None``: the default).

        >>> client.tokens.settings_update(methods=["app", "otp_sms"])  # doctest: +SKIP
        """
        return self._call(
            "tokenSettingsUpdate",
            {"decisionUrl": decision_url, "methods": methods, "randomStr": random_str},
            # null removes the endpoint or the methods: sent (and, as every null, not signed); UNSET is left out.
            keep_none=("decisionUrl", "methods"),
        )

    @operation("tokenSettingsQuery", "read")
    def settings_query(self) -> TokenSettings:
        """The settings as they are now.

        >>> client.tokens.settings_query()["methods"]  # doctest: +SKIP
        """
        return self._call("tokenSettingsQuery", {})
