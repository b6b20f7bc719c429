"""Who a connection is and what it may do: principals, sessions, SASL mechanisms and the
authorizer, as pure logic (the listeners in :mod:`pykraft.runtime` carry the bytes)."""
