"""Protocol conformance: every advertised API at every advertised version, against a real
controller and broker, with requests encoded and responses decoded by kafka-python's protocol
classes (a codec pykraft did not write) where it has the API and version, else by pykraft's
generated classes (then the differential suite's comparison with Kafka is the independent
check). See cases.py for the table."""
