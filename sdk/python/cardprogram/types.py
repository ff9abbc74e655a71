"""Every type generated from the service's OpenAPI document (``_wire.py``): the records, the code
tables, and each operation's ``…Params`` (its body) and ``…Result`` (what it answers).

>>> from cardprogram.types import SandboxAuthorizeParams, TradeRecord  # doctest: +SKIP
"""

from ._wire import *  # noqa: F401,F403
from ._wire import OPERATIONS  # noqa: F401
