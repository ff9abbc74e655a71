"""cardprogram: the merchant SDK for Python (standard library only, Python 3.10 or later).

>>> from cardprogram import Client
>>> client = Client("mch_…", "sk_test_…", "http://127.0.0.1:8080")  # doctest: +SKIP
>>> card = client.cards.apply(holder_id="hld_…", currency="EUR")    # doctest: +SKIP
"""

from types import ModuleType as _ModuleType

from ._client import WATERMARK_REFUSAL, Client, RetryInfo, new_random_str, retry_delay
from ._rsa import RsaPrivateKey
from ._signing import canonical_json, signature, signing_string
from ._version import __version__
from ._wire import (
    AuditStatus,
    Authorization,
    AuthorizationEndpoint,
    AuthorizationRequest,
    Card,
    CardDetails,
    Cardholder,
    CardWithSpending,
    Channel,
    Controls,
    ControlsModel,
    DeclineReason,
    Dispute,
    DisputeEvidence,
    DisputePage,
    DisputeReason,
    DisputeStatus,
    FundingBalance,
    FundingMovement,
    FundingStatementPage,
    KycStatus,
    SandboxThreeDsAuthentication,
    SandboxThreeDsCompletion,
    SandboxTokenProvisioning,
    SandboxTokenVerification,
    SpendingLimit,
    SpendingState,
    ThreeDsARes,
    ThreeDsAuthentication,
    ThreeDsAuthenticationPage,
    ThreeDsSettings,
    TokenSettings,
    TradeDetail,
    TradePage,
    TradeRecord,
    TradeStatus,
    TradeType,
    WalletToken,
    WalletTokenPage,
)
from .errors import (
    APIConnectionError,
    APIConnectionTimeoutError,
    APIError,
    AuthenticationError,
    BadRequestError,
    CardProgramError,
    ConflictError,
    DeclineDetail,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    SignatureDetail,
    WebhookVerificationError,
)
from .events import (
    AuthorizationDeclinedEvent,
    CallbackEvent,
    CardStatusEvent,
    DisputeUpdatedEvent,
    HolderAuditEvent,
    KycResultEvent,
    TradeEvent,
)
from .resources.disputes import evidence_file
from .resources.trades import MAX_WINDOW_DAYS
from .webhooks import Webhooks

__all__ = [name for name, value in list(globals().items()) if not name.startswith("_") and not isinstance(value, _ModuleType)]
__all__.append("__version__")
