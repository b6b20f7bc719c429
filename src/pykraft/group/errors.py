"""The refusal every group check raises: Kafka's error code for the answer (its
ApiException), and a message where Kafka sends one."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode


class GroupError(Exception):
    """A request refused by a group check; ``code`` is what the request is answered with."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
