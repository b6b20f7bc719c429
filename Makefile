# One command sets up and runs the tests; one sets up and runs the main job.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup test lint unit kafka kafka-zk spark-kafka test-interop test-migration test-pipeline \
	pipeline demo cluster \
	clean

$(BIN)/pykraft: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/pykraft

lint: setup
	$(BIN)/ruff check src tests bench examples
	MYPYPATH=examples/pipeline $(BIN)/mypy examples/pipeline
	$(BIN)/mypy
	MYPYPATH=bench $(BIN)/mypy bench
	MYPYPATH=scripts $(BIN)/mypy scripts
	$(BIN)/lint-imports

# Test files run on PYTEST_WORKERS pytest-xdist workers (a file's tests stay on one worker,
# so a module's shared cluster starts once); most integration time is spent waiting on
# timers and other processes, not on the CPU. PYTEST_WORKERS=0 runs in one process.
# The slowest tests are listed at the end (--durations), to keep the run in its budget.
PYTEST_WORKERS ?= 2
unit: setup
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --ignore=tests/interop \
		--ignore=tests/pipeline --ignore=tests/migration_e2e --durations=30 $(PYTEST_ARGS)

# Apache Kafka for the oracle tests (tests/oracle): the version pinned in scripts/kafka/pom.xml
# and its runtime jars from Maven Central, checked against scripts/kafka/jars.sha256, into
# .cache/kafka/<version>/ (at once when cached); then Kafka Streams' own jars for the
# exactly-once acceptance test (scripts/kafka_streams/, into .cache/kafka-streams/<version>/);
# prints the two classpaths.
kafka: setup
	$(BIN)/python scripts/fetch_kafka.py
	$(BIN)/python scripts/fetch_kafka_streams.py

# Apache Kafka 3.9 (ZooKeeper mode, and ZooKeeper 3.8 from its jars) for the ZooKeeper-to-KRaft
# migration (issue 32): the version pinned in scripts/kafka_zk/pom.xml, checked against
# scripts/kafka_zk/jars.sha256, into .cache/kafka-zk/<version>/.
kafka-zk: setup
	$(BIN)/python scripts/fetch_kafka_zk.py > /dev/null

# Spark's Kafka connector (spark-sql-kafka-0-10) for tests/spark: the version pinned in
# scripts/spark_kafka/pom.xml and the jars PySpark lacks, checked against
# scripts/spark_kafka/jars.sha256, into .cache/spark-kafka/<version>/; prints the classpath
# (give it to Spark as spark.jars, comma-separated).
spark-kafka: setup
	$(BIN)/python scripts/fetch_spark_kafka.py

# In CI (CI=true) Kafka and Spark's Kafka connector are fetched first and a failure fails the
# run; elsewhere the oracle and connector tests fetch them themselves, or skip saying why.
test: lint $(if $(filter true,$(CI)),kafka spark-kafka) unit

# Mixed clusters of Apache Kafka and pykraft nodes (tests/interop, issue 26): clusters of
# several JVMs each, so apart from `make test`; CI runs it after `make test`.
test-interop: setup kafka
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests/interop $(PYTEST_ARGS)

# ZooKeeper to KRaft migration end to end (tests/migration_e2e, issue 32): ZooKeeper 3.8 and
# Kafka 3.9 brokers and controllers as real processes (7 JVMs for the reference procedure), so
# apart from `make test`; CI runs it after `make test-interop`.
test-migration: setup kafka-zk
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests/migration_e2e $(PYTEST_ARGS)

# The data pipeline of examples/pipeline as its users run it (tests/pipeline): on local[2]
# with the job SIGKILLed and restarted, on a standalone Spark cluster, through Spark Connect;
# Spark JVMs and a pykraft cluster per test, so apart from `make test`; CI runs it.
test-pipeline: setup spark-kafka
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile tests/pipeline $(PYTEST_ARGS)

# The pipeline end to end on local[*] against a fresh local pykraft cluster under
# PIPELINE_DIR: input produced, the streaming job SIGKILLed after two micro-batches and run
# again from its checkpoint, its Parquet and topic output compared with plain Python.
PIPELINE_DIR ?= data/pipeline
pipeline: setup spark-kafka
	rm -rf $(PIPELINE_DIR)
	$(BIN)/python examples/pipeline/run.py --dir $(PIPELINE_DIR) --kill-after-batches 2

demo: setup
	bash scripts/demo.sh

# The main job: a local 3-controller quorum with a live status table; Ctrl-C stops it and
# the next `make cluster` restarts it on its data (`pykraft cluster delete` removes it).
# CLUSTER_ARGS=--detach runs it in the background (`pykraft cluster down` stops it).
CLUSTER_DIR ?= data/cluster
CLUSTER_ARGS ?=
cluster: setup
	$(BIN)/pykraft cluster up --controllers 3 --brokers 3 --dir $(CLUSTER_DIR) $(CLUSTER_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
