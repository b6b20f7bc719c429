import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.ids import (
    METADATA_TOPIC_ID,
    ZERO_UUID,
    InvalidUuidError,
    random_uuid,
    uuid_from_str,
    uuid_to_str,
)


def test_reserved_ids_have_kafkas_text_form() -> None:
    assert uuid_to_str(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_str(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"


def test_fixture_directory_id_parses() -> None:
    assert uuid_to_str(uuid_from_str("XHhkr4tkSsD900pOQ8pPfg")) == "XHhkr4tkSsD900pOQ8pPfg"


@given(st.uuids())
def test_text_round_trip(value: uuid.UUID) -> None:
    assert uuid_from_str(uuid_to_str(value)) == value


@pytest.mark.parametrize("text", ["", "short", "AAAAAAAAAAAAAAAAAAAAA!", "A" * 23])
def test_invalid_text_is_rejected(text: str) -> None:
    with pytest.raises(InvalidUuidError):
        uuid_from_str(text)


def test_random_uuid_skips_reserved_and_dash_values() -> None:
    dash = uuid.UUID(bytes=b"\xf8" + b"\x00" * 15)  # base64 starts with '-'
    assert uuid_to_str(dash).startswith("-")
    values = iter([ZERO_UUID, METADATA_TOPIC_ID, dash, uuid.UUID(int=42)])
    assert random_uuid(lambda: next(values)) == uuid.UUID(int=42)
