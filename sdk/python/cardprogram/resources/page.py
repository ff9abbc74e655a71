from __future__ import annotations

from typing import Optional

from .._operations import Resource, operation
from .._wire import LoginFreeLinkResult


class Page(Resource):
    """The login-free card page (interface 4.4, docs/login-free-page.md)."""

    @operation("loginFreeLink", "read")
    def link(self, email: Optional[str] = None) -> LoginFreeLinkResult:
        """A one-time address of the hosted card page for your user: send the user there at once; it
        opens once, within 10 minutes. Without ``email``, a product page with nothing personal. Each
        attempt is signed with a timestamp and a fresh single-use ``randomStr``, so a captured
        request cannot mint another link.

        >>> client.page.link(email="alice@example.com")["webUrl"]  # doctest: +SKIP
        """
        return self._call("loginFreeLink", {"email": email})
