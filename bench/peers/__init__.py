"""The systems the quorum benchmark compares: each a 3-node cluster on 127.0.0.1."""
