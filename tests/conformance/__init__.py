"""Protocol conformance: every advertised API at every advertised version, with requests
encoded and responses decoded by independent code (kafka-python's protocol classes, else
kio's entities), against a real controller and broker. See cases.py for the table."""
