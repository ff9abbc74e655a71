from __future__ import annotations

import base64
from typing import Literal, Optional

from .._operations import Resource, operation
from .._wire import Cardholder


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class Holders(Resource):
    """Cardholders (interface 4.2, docs/cardholders.md)."""

    @operation("holderCreate", "write")
    def create(
        self,
        *,
        mobile: str,
        first_name: str,
        email: str,
        date_of_birth: str,
        nationality: str,
        sex: Literal[1, 2],
        country_code: str,
        town: str,
        address: str,
        post_code: str,
        idno_type: Literal[1, 2],
        idno: str,
        last_name: Optional[str] = None,
        random_str: Optional[str] = None,
    ) -> Cardholder:
        """Creates a cardholder. Names, town and address as plain text: the SDK Base64-encodes them as
        the interface wants. Retried safely: one cardholder however many attempts (pass your own
        ``random_str`` to stay idempotent across your own restarts too).

        >>> holder = client.holders.create(
        ...     mobile="+4915112345678", first_name="Alice", last_name="Schmidt", email="alice@example.com",
        ...     date_of_birth="1990-04-12", nationality="DE", sex=2, country_code="DE", town="Berlin",
        ...     address="Unter den Linden 1", post_code="10117", idno_type=2, idno="C01X00T47")  # doctest: +SKIP
        >>> holder["auditStatus"]  # 0, pending review  # doctest: +SKIP
        """
        return self._call(
            "holderCreate",
            {
                "mobile": mobile,
                "firstName": _b64(first_name),
                "lastName": None if last_name is None else _b64(last_name),
                "email": email,
                "dateOfBirth": date_of_birth,
                "nationality": nationality,
                "sex": sex,
                "countryCode": country_code,
                "town": _b64(town),
                "address": _b64(address),
                "postCode": post_code,
                "idnoType": idno_type,
                "idno": idno,
                "randomStr": random_str,
            },
        )

    @operation("holderQuery", "read")
    def get(self, holder_id: str) -> Cardholder:
        """A cardholder and its current audit status.

        >>> client.holders.get("hld_…")["auditStatus"]  # doctest: +SKIP
        """
        return self._call("holderQuery", {"holderId": holder_id})
