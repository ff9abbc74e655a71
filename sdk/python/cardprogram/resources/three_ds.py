from __future__ import annotations

import datetime
from typing import Iterator, Literal, Optional, Union

from .._operations import UNSET, Resource, operation
from .._wire import ThreeDsAuthentication, ThreeDsAuthenticationPage, ThreeDsSettings

#: A day of the AReq (UTC): ``YYYY-MM-DD`` or a ``datetime.date``.
Day = Union[str, datetime.date]


class ThreeDs(Resource):
    """3-D Secure (docs/3ds.md): the authentications of your cards, and how the ACS decides and
    challenges for you. ``client.sandbox.authenticate`` runs one as a directory server would."""

    @operation("threeDsQuery", "read")
    def get(self, acs_trans_id: str) -> ThreeDsAuthentication:
        """One authentication by the ``acsTransID`` its ARes gave: its outcome, reason, ECI, challenge
        method, and the authorizations that used its value. Another merchant's, or an unknown one, is a
        ``NotFoundError`` (``2750``).

        >>> client.three_ds.get("0b9c…")["transStatus"]  # doctest: +SKIP
        """
        return self._call("threeDsQuery", {"acsTransID": acs_trans_id})

    @operation("threeDsList", "read")
    def page(
        self,
        *,
        start: int = 0,
        limit: Optional[int] = None,
        card_id: Optional[str] = None,
        from_: Optional[Day] = None,
        to: Optional[Day] = None,
    ) -> ThreeDsAuthenticationPage:
        """One page of your cards' authentications, newest first; ``from_`` and ``to`` are days of the AReq.

        >>> client.three_ds.page(card_id="card_…")["total"]  # doctest: +SKIP
        """
        return self._call("threeDsList", {"start": start, "limit": limit, "cardId": card_id, "from": from_, "to": to})

    def list(
        self,
        *,
        card_id: Optional[str] = None,
        from_: Optional[Day] = None,
        to: Optional[Day] = None,
        page_size: int = 30,
    ) -> Iterator[ThreeDsAuthentication]:
        """Every authentication matching the filters, newest first: pages are fetched as you iterate.

        >>> for a in client.three_ds.list(card_id="card_…"):  # doctest: +SKIP
        ...     print(a["acsTransID"], a["transStatus"])
        """
        size = min(100, max(1, page_size))

        def walk() -> Iterator[ThreeDsAuthentication]:
            start = 0
            while True:
                page = self.page(card_id=card_id, from_=from_, to=to, start=start, limit=size)
                yield from page["authentications"]
                if len(page["authentications"]) < size or start + size >= page["total"]:
                    return
                start += size

        return walk()

    @operation("threeDsSettingsUpdate", "write")
    def settings_update(
        self,
        *,
        decision_url: Optional[str] = UNSET,
        challenge_method: Optional[Literal["otp", "oob"]] = None,
        random_str: Optional[str] = None,
    ) -> ThreeDsSettings:
        """Changes the settings you pass, and only those: the decision endpoint (each AReq the program
        would not refuse is sent there as a signed ``threeDs.decision`` event, 1 s to answer;
        ``decision_url=None`` removes it, left out it is kept) and the challenge method (``otp``: a
        one-time code you deliver; ``oob``: your app approves).

        >>> client.three_ds.settings_update(decision_url="https://acme.example/3ds-decision", challenge_method="otp")  # doctest: +SKIP
        >>> client.three_ds.settings_update(decision_url=None)  # the program decides  # doctest: +SKIP
        """
        return self._call(
            "threeDsSettingsUpdate",
            {"decisionUrl": decision_url, "challengeMethod": challenge_method, "randomStr": random_str},
            # null removes the endpoint: it is sent (and, as every null, not signed); UNSET is left out.
            keep_none=("decisionUrl",),
        )

    @operation("threeDsChallengeRespond", "write")
    def challenge_respond(
        self,
        *,
        acs_trans_id: str,
        result: Literal["approved", "declined"],
        random_str: Optional[str] = None,
    ) -> ThreeDsAuthentication:
        """Answers an out-of-band challenge (your method is ``oob``; a ``threeDs.challenge`` callback
        told you of it): ``"approved"`` once the cardholder confirmed in your app (``Y``),
        ``"declined"`` otherwise (``N``/``01``). One that is over is a ``ConflictError`` (``2751``).

        >>> client.three_ds.challenge_respond(acs_trans_id="0b9c…", result="approved")["transStatus"]  # doctest: +SKIP
        """
        return self._call(
            "threeDsChallengeRespond",
            {"acsTransID": acs_trans_id, "result": result, "randomStr": random_str},
        )

    @operation("threeDsSettingsQuery", "read")
    def settings_query(self) -> ThreeDsSettings:
        """The settings as they are now (``decisionUrl`` ``None``: none, the program decides).

        >>> client.three_ds.settings_query()["challengeMethod"]  # doctest: +SKIP
        """
        return self._call("threeDsSettingsQuery", {})
