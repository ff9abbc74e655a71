"""How a resource method is tied to its operation: the one place that knows it.

Each method that sends an operation of the OpenAPI document is decorated ``@operation(id, kind)``
and sends it with ``self._call(id, body)``; ``_wire.OPERATIONS`` (generated) gives the path. The
kind says how a retry repeats it (docs/idempotency.md):

- ``"write"``: one ``randomStr`` for every attempt, so the service replays the first answer
  instead of acting twice;
- ``"read"``: a new ``randomStr`` per attempt (the service takes a read's once; the page link too);
- ``"keyed"``: the body carries its own key (``requestNo``), no ``randomStr``.

``npm run lint`` (scripts/sdk-python-operations.ts, through :func:`describe`) fails when an
operation of the document has no method, when a method names no operation, when a method's
keyword arguments are not exactly the operation's fields (snake_case; a Python keyword such as
``from`` takes a trailing underscore: ``from_``), or when its kind is not the operation's.
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, TypeVar, cast

from ._wire import OPERATIONS

F = TypeVar("F", bound=Callable[..., Any])

KINDS = ("write", "read", "keyed")

#: operationId → kind, as the decorators declare them (filled when the resources are imported).
REGISTRY: Dict[str, str] = {}


def operation(operation_id: str, kind: str) -> Callable[[F], F]:
    """Marks a resource method as the one that sends ``operation_id``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")

    def mark(fn: F) -> F:
        fn.__cardprogram_operation__ = (operation_id, kind)  # type: ignore[attr-defined]
        REGISTRY[operation_id] = kind
        return fn

    return mark


class _Unset:
    """The default of an argument whose field is left out of the request (the setting unchanged),
    where ``None`` sends ``null`` (the setting removed): ``three_ds.settings_update(decision_url=None)``."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: The one value of :class:`_Unset`.
UNSET: Any = _Unset()


class Requester:
    """What a resource sends through: the client (``request(path, body, kind)``)."""

    def request(self, path: str, body: Mapping[str, Any], kind: str) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


class Resource:
    """A group of methods (``client.cards``, ``client.trades``, …)."""

    def __init__(self, client: Requester) -> None:
        self._client = client

    def _call(self, operation_id: str, body: Mapping[str, Any], keep_none: tuple = ()) -> Any:
        """Sends an operation; ``None`` values are left out of the body except the fields in ``keep_none``
        (sent as ``null``), and ``UNSET`` ones always."""
        path = OPERATIONS.get(operation_id)
        if path is None:
            raise ValueError(f"the service's OpenAPI document has no operation {operation_id} (regenerate _wire.py)")
        kind = REGISTRY[operation_id]
        sent = {k: v for k, v in body.items() if v is not UNSET and (v is not None or k in keep_none)}
        return self._client.request(path, sent, kind)


def snake(field: str) -> str:
    """The keyword argument of a wire field: ``holderId`` → ``holder_id``, ``from`` → ``from_``."""
    out = []
    for i, ch in enumerate(field):
        if ch.isupper() and i > 0 and (field[i - 1].islower() or field[i - 1].isdigit()):
            out.append("_")
        out.append(ch.lower())
    name = "".join(out)
    return name + "_" if keyword.iskeyword(name) else name


def describe() -> List[Dict[str, Any]]:
    """Every method tied to an operation, for the lint check: its operation, kind, arguments and where it is."""
    from ._client import Client

    client = Client("mch_describe", "sk_describe", "http://127.0.0.1:1")
    found: List[Dict[str, Any]] = []
    for attr in sorted(vars(client)):
        resource = getattr(client, attr)
        if not isinstance(resource, Resource):
            continue
        for name, member in inspect.getmembers(type(resource), inspect.isfunction):
            marked: Optional[tuple] = getattr(member, "__cardprogram_operation__", None)
            if marked is None:
                continue
            operation_id, kind = marked
            params = [p for p in inspect.signature(member).parameters.values() if p.name != "self"]
            source = inspect.getsource(member)
            found.append(
                {
                    "operation": operation_id,
                    "kind": kind,
                    "method": f"{attr}.{name}",
                    "params": [p.name for p in params],
                    "required": [p.name for p in params if p.default is inspect.Parameter.empty],
                    # The method must send the operation its decorator names.
                    "sends": re.search(r'self\._call\(\s*"' + re.escape(operation_id) + '"', source) is not None,
                    "file": cast(str, inspect.getsourcefile(member)),
                    "line": inspect.getsourcelines(member)[1],
                }
            )
    return found
