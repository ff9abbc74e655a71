"""The client's resources, one file per group of operations (``client.cards``, ``client.trades``, …).

To add an operation: a method on its resource (or a new file here, attached in ``_client.py``),
decorated ``@operation("operationId", "write" | "read" | "keyed")``, taking the operation's fields
as keyword arguments in snake_case and sending them with ``self._call("operationId", {...})``.
``npm run lint`` names every operation of the OpenAPI document that has no such method.
"""
