"""``dump-log --transaction-log-decoder``: a ``__transaction_state`` record as Kafka's
``DumpLogSegments.TransactionLogMessageParser`` prints it: the key
``{"type": "0", "data": {"transactionalId": ...}}``, the value
``{"version": "<0 or 1>", "data": {...}}`` with the transaction's state by name (``Ongoing``)
where the record holds its id, or ``<DELETE>`` for a tombstone (an expired id)."""

from __future__ import annotations

from typing import Any

from pykraft.errors import MessageDecodeError
from pykraft.messages import decode, to_json_dict
from pykraft.records.batch import Record
from pykraft.tools.dump_offsets import coordinator_contents, typed, versioned
from pykraft.txn.records import (
    KEY_VERSION,
    TransactionLogKey,
    TransactionLogValue,
    split_version,
)
from pykraft.txn.state import TxnState


def transaction_contents(record: Record) -> dict[str, Any]:
    """The ``key`` and ``payload`` dump-log prints for ``record``."""
    return coordinator_contents(record, _decoded)


def _decoded(key_bytes: bytes, value_bytes: bytes | None, offset: int) -> dict[str, Any]:
    kind, key = split_version(key_bytes, "key")
    if kind != KEY_VERSION:
        return {"key": f"Unknown record type {kind} at offset {offset}, skipping."}
    contents: dict[str, Any] = {
        "key": typed(kind, to_json_dict(decode(TransactionLogKey, 0, key), 0))}
    if value_bytes is None:
        return contents | {"payload": "<DELETE>"}
    version, body = split_version(value_bytes, "value")
    if version not in (0, 1):
        raise MessageDecodeError(f"Unknown version {version} from the transaction log "
                                 "message value", position=0)
    value = decode(TransactionLogValue, version, body)
    data = to_json_dict(value, version)
    try:
        data["transactionStatus"] = TxnState.from_id(value.transaction_status).display
    except ValueError as exc:  # a status Kafka does not define either
        raise MessageDecodeError(str(exc), position=0) from None
    return contents | {"payload": versioned(version, data)}

