"""KRaft brokers: the metadata image fetched as an observer, registration and heartbeats
with the active controller, and the client-facing APIs of the PLAINTEXT listener."""
