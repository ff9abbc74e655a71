from __future__ import annotations

import datetime
from typing import Dict, Literal, Optional, Union

from .._operations import Resource, operation
from .._wire import (
    AuditStatusValue,
    CardDetails,
    Cardholder,
    ChannelValue,
    Dispute,
    KycStatus,
    SandboxThreeDsAuthentication,
    SandboxThreeDsCompletion,
    SandboxTokenProvisioning,
    SandboxTokenVerification,
    TradeRecord,
)

#: A business day: ``YYYY-MM-DD`` or a ``datetime.date``.
Day = Union[str, datetime.date]


class Sandbox(Resource):
    """The sandbox's simulation of the card network and of the reviewers (404 in production): what a
    card scheme or a compliance team would do, on demand, for tests and demos. ``business_date``
    (``YYYY-MM-DD`` or a ``date``) books a transaction on another day."""

    @operation("sandboxHolderReview", "write")
    def review_holder(
        self, *, holder_id: str, audit_status: AuditStatusValue, err_msg: Optional[str] = None, random_str: Optional[str] = None
    ) -> Cardholder:
        """Sets a cardholder's audit status as a reviewer would (2 approves).

        >>> client.sandbox.review_holder(holder_id="hld_…", audit_status=2)  # doctest: +SKIP
        """
        return self._call(
            "sandboxHolderReview", {"holderId": holder_id, "auditStatus": audit_status, "errMsg": err_msg, "randomStr": random_str}
        )

    @operation("sandboxKycReview", "write")
    def review_kyc(
        self,
        *,
        request_no: str,
        kyc_status: Literal["approved", "rejected"],
        reason: Optional[str] = None,
        random_str: Optional[str] = None,
    ) -> KycStatus:
        """Decides a KYC request as a reviewer would.

        >>> client.sandbox.review_kyc(request_no="REQ-1", kyc_status="approved")  # doctest: +SKIP
        """
        return self._call(
            "sandboxKycReview", {"requestNo": request_no, "kycStatus": kyc_status, "reason": reason, "randomStr": random_str}
        )

    @operation("sandboxAuthorize", "write")
    def authorize(
        self,
        *,
        card_id: str,
        amount: float,
        currency_txn: Optional[str] = None,
        txn_amount: Optional[float] = None,
        remark: Optional[str] = None,
        mcc: Optional[str] = None,
        merchant_name: Optional[str] = None,
        merchant_city: Optional[str] = None,
        merchant_country: Optional[str] = None,
        channel: Optional[ChannelValue] = None,
        cvv2: Optional[str] = None,
        expiry: Optional[str] = None,
        eci: Optional[str] = None,
        authentication_value: Optional[str] = None,
        token_id: Optional[str] = None,
        business_date: Optional[Day] = None,
        random_str: Optional[str] = None,
    ) -> TradeRecord:
        """A card payment's authorization (150): holds the amount. A decline raises a ``ConflictError``
        (``2724``, ``2725``, ``2728``, ``2729``, ``2731``, ``2732``, ``2733``, ``2734``) whose ``decline`` names the
        declined authorization. ``cvv2`` and ``expiry`` (YYMM), when sent, are checked against the card; a
        mismatch counts toward the card's security freeze (5 within 24 hours). ``eci`` and
        ``authentication_value`` are a 3-D Secure authentication's (``sandbox.authenticate``): good once,
        for this card, up to the authenticated amount (else ``2732``). ``token_id`` is a wallet token's
        (``sandbox.provision_token``): this card's active token, else ``2734`` (``token_unknown``,
        ``token_inactive``); its wallet must be in the controls' ``allowedWallets`` when they set it (``2728``).

        >>> client.sandbox.authorize(card_id="card_…", amount=12.5, remark="Coffee", mcc="5814", channel="pos")  # doctest: +SKIP
        """
        return self._call(
            "sandboxAuthorize",
            {
                "cardId": card_id,
                "amount": amount,
                "currencyTxn": currency_txn,
                "txnAmount": txn_amount,
                "remark": remark,
                "mcc": mcc,
                "merchantName": merchant_name,
                "merchantCity": merchant_city,
                "merchantCountry": merchant_country,
                "channel": channel,
                "cvv2": cvv2,
                "expiry": expiry,
                "eci": eci,
                "authenticationValue": authentication_value,
                "tokenId": token_id,
                "businessDate": business_date,
                "randomStr": random_str,
            },
        )

    @operation("sandboxClear", "write")
    def clear(
        self, *, trade_id: str, amount: Optional[float] = None, business_date: Optional[Day] = None, random_str: Optional[str] = None
    ) -> TradeRecord:
        """Clears an authorization: the payment (151) takes the held amount (or ``amount``)."""
        return self._call(
            "sandboxClear", {"tradeId": trade_id, "amount": amount, "businessDate": business_date, "randomStr": random_str}
        )

    @operation("sandboxReverse", "write")
    def reverse(
        self, *, trade_id: str, amount: Optional[float] = None, business_date: Optional[Day] = None, random_str: Optional[str] = None
    ) -> TradeRecord:
        """Releases part or all of an authorization's hold."""
        return self._call(
            "sandboxReverse", {"tradeId": trade_id, "amount": amount, "businessDate": business_date, "randomStr": random_str}
        )

    @operation("sandboxVoid", "write")
    def void(self, *, trade_id: str, business_date: Optional[Day] = None, random_str: Optional[str] = None) -> TradeRecord:
        """Voids an authorization or a payment."""
        return self._call("sandboxVoid", {"tradeId": trade_id, "businessDate": business_date, "randomStr": random_str})

    @operation("sandboxRefund", "write")
    def refund(
        self, *, trade_id: str, amount: float, business_date: Optional[Day] = None, random_str: Optional[str] = None
    ) -> TradeRecord:
        """Refunds part or all of a payment."""
        return self._call(
            "sandboxRefund", {"tradeId": trade_id, "amount": amount, "businessDate": business_date, "randomStr": random_str}
        )

    @operation("sandboxWithdraw", "write")
    def withdraw(
        self,
        *,
        card_id: str,
        amount: float,
        currency_txn: Optional[str] = None,
        merchant_country: Optional[str] = None,
        remark: Optional[str] = None,
        business_date: Optional[Day] = None,
        random_str: Optional[str] = None,
    ) -> TradeRecord:
        """A cash withdrawal at an ATM (110)."""
        return self._call(
            "sandboxWithdraw",
            {
                "cardId": card_id,
                "amount": amount,
                "currencyTxn": currency_txn,
                "merchantCountry": merchant_country,
                "remark": remark,
                "businessDate": business_date,
                "randomStr": random_str,
            },
        )

    @operation("sandboxTransfer", "write")
    def transfer(
        self,
        *,
        card_id: str,
        to_card_id: str,
        amount: float,
        remark: Optional[str] = None,
        business_date: Optional[Day] = None,
        random_str: Optional[str] = None,
    ) -> TradeRecord:
        """A transfer between two cards of the merchant (121 out, 120 in)."""
        return self._call(
            "sandboxTransfer",
            {
                "cardId": card_id,
                "toCardId": to_card_id,
                "amount": amount,
                "remark": remark,
                "businessDate": business_date,
                "randomStr": random_str,
            },
        )

    @operation("sandboxAdjust", "write")
    def adjust(
        self,
        *,
        card_id: str,
        amount: float,
        direction: Literal["credit", "debit"],
        remark: Optional[str] = None,
        business_date: Optional[Day] = None,
        random_str: Optional[str] = None,
    ) -> TradeRecord:
        """A settlement adjustment (200)."""
        return self._call(
            "sandboxAdjust",
            {
                "cardId": card_id,
                "amount": amount,
                "direction": direction,
                "remark": remark,
                "businessDate": business_date,
                "randomStr": random_str,
            },
        )

    @operation("sandboxBalanceInquiry", "write")
    def balance_inquiry(self, *, card_id: str, business_date: Optional[Day] = None, random_str: Optional[str] = None) -> TradeRecord:
        """A balance inquiry (300, no money)."""
        return self._call("sandboxBalanceInquiry", {"cardId": card_id, "businessDate": business_date, "randomStr": random_str})

    @operation("sandboxFee", "write")
    def fee(
        self,
        *,
        card_id: str,
        amount: float,
        remark: Optional[str] = None,
        business_date: Optional[Day] = None,
        random_str: Optional[str] = None,
    ) -> TradeRecord:
        """A fee (500)."""
        return self._call(
            "sandboxFee",
            {"cardId": card_id, "amount": amount, "remark": remark, "businessDate": business_date, "randomStr": random_str},
        )

    @operation("sandboxCardDetails", "read")
    def card_details(self, card_id: str) -> CardDetails:
        """The full number, expiry and CVV (sandbox only; in production only the cardholder sees them, on the card page)."""
        return self._call("sandboxCardDetails", {"cardId": card_id})

    @operation("sandboxDisputeDecide", "write")
    def decide_dispute(
        self,
        *,
        dispute_id: str,
        outcome: Literal["won", "lost"],
        amount: Optional[float] = None,
        random_str: Optional[str] = None,
    ) -> Dispute:
        """Decides a submitted dispute at once, as the network would: ``won`` pays back ``amount`` (default all)."""
        return self._call(
            "sandboxDisputeDecide", {"disputeId": dispute_id, "outcome": outcome, "amount": amount, "randomStr": random_str}
        )

    @operation("sandboxThreeDsAuthenticate", "write")
    def authenticate(
        self,
        *,
        card_id: str,
        amount: float,
        currency: Optional[str] = None,
        merchant_name: Optional[str] = None,
        challenge_ind: Optional[str] = None,
        random_str: Optional[str] = None,
    ) -> SandboxThreeDsAuthentication:
        """Authenticates a purchase with 3-D Secure as a directory server would: the ARes (``Y`` with
        ``eci`` and ``authenticationValue``, ``N`` or ``U`` with ``transStatusReason``, ``C``), and for
        a challenge the form (``acsURL``, ``creq``) that opens it in a browser. ``currency`` defaults to
        the card's; ``challenge_ind`` is the EMV threeDSRequestorChallengeInd (``"04"``: challenge
        mandated; a challenge needs your notify URL). Read it afterwards with ``client.three_ds.get``.

        >>> client.sandbox.authenticate(card_id="card_…", amount=12.5, challenge_ind="04")["ares"]["transStatus"]  # doctest: +SKIP
        """
        return self._call(
            "sandboxThreeDsAuthenticate",
            {
                "cardId": card_id,
                "amount": amount,
                "currency": currency,
                "merchantName": merchant_name,
                "challengeInd": challenge_ind,
                "randomStr": random_str,
            },
        )

    @operation("sandboxTokenProvision", "write")
    def provision_token(
        self,
        *,
        card_id: str,
        wallet_provider: Literal["apple_pay", "google_pay", "samsung_pay", "card_on_file"],
        wallet_risk_score: Optional[int] = None,
        device: Optional[Dict[str, str]] = None,
        random_str: Optional[str] = None,
    ) -> SandboxTokenProvisioning:
        """Provisions a wallet token for one of your cards as the wallet's token service provider would
        (the same decision as ``POST /tsp/provision``): ``approve`` (an active token),
        ``require_authentication`` (a pending one; a one-time code for the first code method is in your
        ``token.otp`` callback at once) or ``decline``. ``wallet_risk_score`` is 0–9 (default 0);
        ``device`` is ``{"type": "phone", "name": "…"}``. The answer carries the ``tokenReferenceId`` and
        ``tokenRequestorId`` the card network link's field 48 subelements 33 and 34 name.

        >>> client.sandbox.provision_token(card_id="card_…", wallet_provider="apple_pay")["decision"]  # doctest: +SKIP
        """
        return self._call(
            "sandboxTokenProvision",
            {
                "cardId": card_id,
                "walletProvider": wallet_provider,
                "walletRiskScore": wallet_risk_score,
                "device": device,
                "randomStr": random_str,
            },
        )

    @operation("sandboxTokenVerify", "write")
    def verify_token(self, *, token_id: str, code: str, random_str: Optional[str] = None) -> SandboxTokenVerification:
        """Finishes a wallet token's step-up with the code from your ``token.otp`` callback, as the TSP
        would pass it on: right, the token turns active; a wrong one counts (the third deletes the token).

        >>> client.sandbox.verify_token(token_id="tok_…", code="123456")["valid"]  # doctest: +SKIP
        """
        return self._call("sandboxTokenVerify", {"tokenId": token_id, "code": code, "randomStr": random_str})

    @operation("sandboxThreeDsComplete", "write")
    def complete_challenge(
        self,
        *,
        acs_trans_id: str,
        otp: Optional[str] = None,
        result: Optional[Literal["approved", "declined"]] = None,
        random_str: Optional[str] = None,
    ) -> SandboxThreeDsCompletion:
        """Finishes a 3-D Secure challenge without a browser: ``otp`` as the cardholder would type it
        (the code is in your ``threeDs.otp`` callback; a wrong one counts, the third ends it ``N``/``19``),
        or ``result`` (``"approved"``/``"declined"``) as your app would answer an out-of-band one. Gives
        the authentication, the wrong codes still allowed, and once it is over the ``cres``, and the
        ``eci`` and (for ``Y``) the ``authenticationValue`` as the DS hands them on from the RReq, for
        the authorization (sandbox only).

        >>> client.sandbox.complete_challenge(acs_trans_id="0b9c…", otp="123456")["authentication"]["transStatus"]  # doctest: +SKIP
        """
        return self._call(
            "sandboxThreeDsComplete",
            {"acsTransID": acs_trans_id, "otp": otp, "result": result, "randomStr": random_str},
        )
