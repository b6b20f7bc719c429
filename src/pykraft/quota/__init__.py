"""Client quota enforcement, sans-I/O: Kafka's sampled rates and token buckets, its quota
resolution over the image's client quotas, and the throttle times its quota managers
compute (times come in as ``now_ms``; nothing here sleeps or reads a clock)."""
