from __future__ import annotations

from typing import Literal, Optional

from .._operations import Resource, operation
from .._wire import KycShareParamsIndividualInfo, KycShareParamsIndividualInfoAddress, KycStatus


class Kyc(Resource):
    """KYC sharing (interface 4.3, docs/kyc.md)."""

    @operation("kycShare", "keyed")
    def share(
        self,
        *,
        request_no: str,
        email: str,
        kyc_platform: str,
        callback_url: str,
        individual_info: KycShareParamsIndividualInfo,
        holder_type: Literal["1"] = "1",
        address: Optional[KycShareParamsIndividualInfoAddress] = None,
    ) -> None:
        """Submits a KYC share request. ``request_no`` is its key for ever: a retry with it is answered
        as the first was, never a second request. The result arrives as a ``kyc.result`` callback at
        ``callback_url``, and through ``kyc.get``. ``individual_info`` is the interface's object, its
        keys as the interface names them (``firstName``, ``dob``, ``idDocType``, …).

        >>> client.kyc.share(request_no="REQ-1", email="bob@example.com", kyc_platform="SUMSUB",
        ...     callback_url="https://you.example/hooks", individual_info={...})  # doctest: +SKIP
        """
        self._call(
            "kycShare",
            {
                "requestNo": request_no,
                "email": email,
                "kycPlatform": kyc_platform,
                "holderType": holder_type,
                "callbackUrl": callback_url,
                "individualInfo": individual_info,
                "address": address,
            },
        )

    @operation("kycQuery", "read")
    def get(self, request_no: str) -> KycStatus:
        """The state of a KYC request.

        >>> client.kyc.get("REQ-1")["kycStatus"]  # doctest: +SKIP
        """
        return self._call("kycQuery", {"requestNo": request_no})
