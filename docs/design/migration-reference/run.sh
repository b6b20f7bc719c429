#!/usr/bin/env bash
# Reference run of a ZooKeeper -> KRaft migration (KIP-866) done by Kafka 3.9.1 itself, to
# capture the facts pykraft's migration must reproduce: znodes before/after, the metadata log,
# the legacy RPC versions, the tools' outputs. See docs/design/migration-plan.md.
#
# Usage: run.sh KAFKA39_LIBS RUN_DIR OUT_DIR
#   KAFKA39_LIBS  Kafka 3.9.1's libs/ (kafka_2.13-3.9.1 and its runtime jars, zookeeper 3.8.4)
#   RUN_DIR       scratch dir (wiped), holds data dirs and full logs
#   OUT_DIR       where the captured outputs go (znode dumps, metadata dumps, RPC versions)
# Env: KAZOO_PATH (dir with kazoo==2.11.0 installed by pip --target), PY (python3),
#      PORT_BASE (default 24100: ZK +81, brokers +91..93, controllers +191..193),
#      FAULT_DURING_LOAD=1: load in batches of one record, SIGKILL the active controller
#      after its fifth committed batch (the next one aborts the transaction and reloads),
#      and stop once the load is done (phase B2);
#      FAULT_ZK_RESTART=1: after phase B4, stop ZooKeeper for ~8 s while a topic config
#      changes in KRaft, restart it, wait for the change to reach ZooKeeper, then go on.
# Every process it starts is stopped by its PID on exit; every wait is bounded.
set -euo pipefail

LIBS=$(cd "$1" && pwd)
RUN=$2
OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
BASE=${PORT_BASE:-24100}
ZK_PORT=$((BASE + 81))
ZK=127.0.0.1:$ZK_PORT
BROKERS=(1 2 3)
CONTROLLERS=(3000 3001 3002)
bport() { echo $((BASE + 90 + $1)); }
cport() { echo $((BASE + 191 + $1 - 3000)); }
VOTERS="3000@127.0.0.1:$(cport 3000),3001@127.0.0.1:$(cport 3001),3002@127.0.0.1:$(cport 3002)"
BOOT="127.0.0.1:$(bport 1),127.0.0.1:$(bport 2),127.0.0.1:$(bport 3)"
CBOOT="127.0.0.1:$(cport 3000)"

rm -rf "$RUN" "$OUT" && mkdir -p "$RUN/pids" "$OUT"
cleanup() {  # brokers first (their controlled shutdown needs the controllers), then controllers, then ZK
  local group f pid
  for group in b c zk; do
    for f in "$RUN"/pids/"$group"*.pid; do
      [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
    done
    for f in "$RUN"/pids/"$group"*.pid; do
      [ -e "$f" ] || continue
      pid=$(cat "$f")
      for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$f"
    done
  done
}
trap cleanup EXIT

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/timeline.txt"; }

# log4j 1 configs: servers log INFO to stdout; request logger DEBUG in its own file (the
# legacy RPC versions); migration classes at DEBUG on controllers.
mk_log4j() {  # name
  cat >"$RUN/$1.log4j" <<EOF
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.req=org.apache.log4j.FileAppender
log4j.appender.req.File=$RUN/$1.requests.log
log4j.appender.req.layout=org.apache.log4j.PatternLayout
log4j.appender.req.layout.ConversionPattern=[%d] %m%n
log4j.logger.kafka.request.logger=DEBUG, req
log4j.additivity.kafka.request.logger=false
log4j.logger.state.change.logger=TRACE
log4j.logger.org.apache.kafka.metadata.migration=DEBUG
log4j.logger.kafka.migration=DEBUG
log4j.logger.kafka.zk.migration=DEBUG
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.zookeeper=WARN
EOF
}
cat >"$RUN/tools.log4j" <<EOF
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
EOF

JOPTS=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k)
start_java() {  # name xmx main args...
  local name=$1 xmx=$2 main=$3
  shift 3
  mk_log4j "$name"
  # One log per incarnation (name.log is the current one), so waits never match an old line.
  if [ -e "$RUN/$name.log" ]; then mv "$RUN/$name.log" "$RUN/$name.log.$(date +%s%N)"; fi
  java -Xmx"$xmx" "${JOPTS[@]}" -Dlog4j.configuration="file:$RUN/$name.log4j" \
    -cp "$LIBS/*" "$main" "$@" >>"$RUN/$name.log" 2>&1 &
  echo $! >"$RUN/pids/$name.pid"
  log "started $name pid $!"
}
stop_java() {  # name: SIGTERM (controlled shutdown for brokers), bounded wait, then SIGKILL
  local f="$RUN/pids/$1.pid" pid
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 240); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then log "$1 did not stop in 120 s: SIGKILL"; kill -9 "$pid"; fi
  rm -f "$f"
  log "stopped $1"
}
wait_log() {  # file pattern timeout_s
  for _ in $(seq 1 "$3"); do
    if grep -q -- "$2" "$1" 2>/dev/null; then return 0; fi
    sleep 1
  done
  log "TIMEOUT waiting for '$2' in $1"
  return 1
}
wait_port() {  # port timeout_s
  for _ in $(seq 1 "$2"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 1
  done
  log "TIMEOUT waiting for port $1"
  return 1
}
tool() {  # main args... (a Kafka 3.9.1 tool, WARN logging)
  java -Xmx256m "${JOPTS[@]}" -Dlog4j.configuration="file:$RUN/tools.log4j" -cp "$LIBS/*" "$@"
}
zkdump() {  # label
  PYTHONPATH="${KAZOO_PATH:-}" "$PY" "$HERE/zkdump.py" "$ZK" "$OUT/znodes-$1.json"
  log "znodes dumped: znodes-$1.json"
}
wait_no_urp() {  # bootstrap
  for _ in $(seq 1 60); do
    if out=$(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --describe \
      --under-replicated-partitions 2>/dev/null) && [ -z "$out" ]; then return 0; fi
    sleep 2
  done
  log "TIMEOUT: under-replicated partitions remain"
  return 1
}
produce() {  # topic n tag (keyed "k<i>:<tag>-<i>", so the compacted topic accepts them)
  seq 1 "$2" | sed "s/^\(.*\)$/k\1:$3-\1/" | tool kafka.tools.ConsoleProducer --bootstrap-server "$BOOT" \
    --topic "$1" --producer-property acks=all --producer-property enable.idempotence=true \
    --property parse.key=true --property key.separator=:
  log "produced $2 to $1 ($3)"
}
dump_metadata() {  # label node
  local dir="$RUN/c$2/data/__cluster_metadata-0"
  # shellcheck disable=SC2046
  tool kafka.tools.DumpLogSegments --cluster-metadata-decoder --files \
    $(ls "$dir"/*.log | paste -sd, -) >"$OUT/metadata-$1.txt"
  log "metadata log dumped: metadata-$1.txt ($(grep -c 'payload' "$OUT/metadata-$1.txt") batches/records lines)"
}
quorum() {  # label
  {
    echo "## kafka-metadata-quorum --bootstrap-controller $CBOOT describe --status"
    tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$CBOOT" describe --status || true
    echo "## kafka-metadata-quorum describe --replication"
    tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$CBOOT" describe --replication || true
    echo "## kafka-features --bootstrap-controller describe"
    tool org.apache.kafka.tools.FeatureCommand --bootstrap-controller "$CBOOT" describe || true
    echo "## kafka-features --bootstrap-server describe"
    tool org.apache.kafka.tools.FeatureCommand --bootstrap-server "$BOOT" describe || true
  } >"$OUT/quorum-$1.txt" 2>&1
  log "quorum/features captured: quorum-$1.txt"
}

summarise() {  # condensed views of the logs and dumps (at the end, or after the load with FAULT_DURING_LOAD)
  local n key f
  for n in b1 b2 b3 c3000 c3001 c3002; do
    [ -e "$RUN/$n.requests.log" ] || continue
    grep -o '"requestApiKey":[0-9]*,"requestApiVersion":[0-9]*' "$RUN/$n.requests.log" \
      | sort | uniq -c | sed "s/^/$n /" >>"$OUT/request-versions.txt" || true
  done
  cat "$RUN"/c*.log* \
    | grep "KRaftMigrationDriver\|KafkaZkClient\|ZkMigrationState\|Performing controller activation\|pre-migration\|ZK migration\|Reverted to offset\|Not sending request" \
    | grep -v "Still waiting\|No brokers are known\|Kept migration state\|Ignoring image\|Expected driver state" \
    | cut -c1-700 >"$OUT/controller-migration-lines.txt" || true
  # The metadata records without NoOps, and one line per raft batch:
  # baseOffset lastOffset count leaderEpoch isControl.
  for f in "$OUT"/metadata-*.txt; do
    grep "payload" "$f" | grep -v NO_OP_RECORD \
      | sed 's/^| offset: \([0-9]*\) .*payload: /\1 /' >"${f%.txt}.records"
    grep "^baseOffset" "$f" | awk '{print $2, $4, $6, $16, $20}' >"${f%.txt}.batches"
  done
  # Examples of the legacy RPCs a KRaft controller sent (LeaderAndIsr 4, StopReplica 5,
  # UpdateMetadata 6), as the brokers' request logs show them, and their counts.
  for n in b1 b2 b3; do
    for key in 4 5 6; do
      grep '"isKRaftController":true' "$RUN/$n.requests.log" | grep "\"requestApiKey\":$key," \
        | head -2 | sed 's/^\[[^]]*\] Completed request://' | cut -c1-3000 >>"$OUT/legacy-rpcs-$n.jsonl" || true
    done
  done
  "$PY" - "$RUN" >"$OUT/legacy-rpc-counts.txt" <<'PYEOF'
import collections, json, sys
for broker in ("b1", "b2", "b3"):
    counts = collections.Counter()
    with open(f"{sys.argv[1]}/{broker}.requests.log", encoding="utf-8") as log:
        for line in log:
            if '"isKRaftController":true' not in line:
                continue
            entry = json.loads(line.split("Completed request:", 1)[1])
            header, body = entry["requestHeader"], entry["request"]
            counts[(header["requestApiKeyName"], header["requestApiVersion"], body.get("type", 0))] += 1
    for (api, version, kind), n in sorted(counts.items()):
        print(f"{broker} {api} v{version} type={kind}: {n}")
PYEOF
  grep -h '"requestApiKeyName":"API_VERSIONS"' "$RUN"/c*.requests.log | grep -o '"zkMigrationReady":[a-z]*' \
    | sort | uniq -c >"$OUT/controller-apiversions-zkMigrationReady.txt" || true
  # The last heartbeat each controller answered for each broker (fenced or not, as it told it).
  "$PY" - "$RUN" >"$OUT/last-heartbeats.txt" <<'PYEOF'
import glob, json, os, sys
for path in sorted(glob.glob(f"{sys.argv[1]}/c*.requests.log")):
    last = {}
    with open(path, encoding="utf-8") as log:
        for line in log:
            if '"requestApiKeyName":"BROKER_HEARTBEAT"' in line:
                entry = json.loads(line.split("Completed request:", 1)[1])
                last[entry["request"]["brokerId"]] = (line[1:24], entry["request"], entry["response"])
    for broker, (when, request, response) in sorted(last.items()):
        print(os.path.basename(path).split(".")[0], when, json.dumps(request), json.dumps(response))
PYEOF
}

# ---------------------------------------------------------------- configs
cat >"$RUN/zk.properties" <<EOF
dataDir=$RUN/zk
clientPort=$ZK_PORT
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
EOF
common_broker() {  # id
  cat <<EOF
listeners=PLAINTEXT://127.0.0.1:$(bport "$1")
advertised.listeners=PLAINTEXT://127.0.0.1:$(bport "$1")
log.dirs=$RUN/b$1/data
num.network.threads=2
num.io.threads=2
background.threads=2
num.replica.fetchers=1
log.cleaner.threads=1
offsets.topic.replication.factor=3
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=3
transaction.state.log.num.partitions=3
transaction.state.log.min.isr=2
group.initial.rebalance.delay.ms=0
super.users=User:ANONYMOUS
allow.everyone.if.no.acl.found=true
EOF
}
zk_broker() {  # id (phase A: plain ZK mode)
  common_broker "$1"
  cat <<EOF
broker.id=$1
zookeeper.connect=$ZK
inter.broker.protocol.version=3.9
authorizer.class.name=kafka.security.authorizer.AclAuthorizer
EOF
}
mig_broker() {  # id (phase B: ZK mode with migration enabled)
  zk_broker "$1"
  cat <<EOF
zookeeper.metadata.migration.enable=true
controller.quorum.voters=$VOTERS
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
EOF
}
kraft_broker() {  # id (phase C: KRaft mode, same id and log.dirs)
  common_broker "$1"
  cat <<EOF
process.roles=broker
node.id=$1
controller.quorum.voters=$VOTERS
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
EOF
}
controller() {  # id migrate(true|false)
  cat <<EOF
process.roles=controller
node.id=$1
controller.quorum.voters=$VOTERS
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:$(cport "$1")
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$RUN/c$1/data
num.network.threads=1
num.io.threads=2
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
allow.everyone.if.no.acl.found=true
EOF
  if [ "$2" = true ]; then
    cat <<EOF
zookeeper.metadata.migration.enable=true
zookeeper.connect=$ZK
inter.broker.listener.name=PLAINTEXT
EOF
    if [ "${FAULT_DURING_LOAD:-0}" = 1 ]; then echo "zookeeper.metadata.migration.min.batch.size=1"; fi
  fi
}
kill_during_load() {  # SIGKILL the controller running the load after its 5th committed batch
  local f n c
  for _ in $(seq 1 1200); do
    for f in "$RUN"/c*.log; do
      n=$(grep -c "Finished waiting for the metadata layer to commit 1 migration records" "$f" || true)
      if [ "$n" -ge 5 ]; then
        c=$(basename "$f" .log)
        kill -9 "$(cat "$RUN/pids/$c.pid")"
        rm -f "$RUN/pids/$c.pid"
        log "$c SIGKILLed during the load, after $n committed batches"
        for _ in $(seq 1 300); do
          grep -q "Completed migration of metadata from ZooKeeper to KRaft" "$RUN"/c*.log && break
          sleep 1
        done
        start_java "$c" 384m kafka.Kafka "$RUN/$c.mig.properties"
        wait_log "$RUN/$c.log" "Kafka Server started" 180
        return 0
      fi
    done
    sleep 0.1
  done
  log "TIMEOUT: no load in progress to interrupt"
  return 1
}

# ---------------------------------------------------------------- phase A: ZooKeeper cluster
log "phase A: ZooKeeper + 3 ZK-mode brokers"
start_java zk 192m org.apache.zookeeper.server.quorum.QuorumPeerMain "$RUN/zk.properties"
wait_port "$ZK_PORT" 60
for b in "${BROKERS[@]}"; do
  zk_broker "$b" >"$RUN/b$b.zk.properties"
  start_java "b$b" 384m kafka.Kafka "$RUN/b$b.zk.properties"
done
for b in "${BROKERS[@]}"; do wait_log "$RUN/b$b.log" "\[KafkaServer id=$b\] started" 180; done

TC=(org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOT")
tool "${TC[@]}" --create --topic t-rf3 --partitions 3 --replication-factor 3 \
  --config min.insync.replicas=2 --config retention.ms=604800000
tool "${TC[@]}" --create --topic t-compact --partitions 2 --replication-factor 2 \
  --config cleanup.policy=compact --config segment.bytes=1048576
tool "${TC[@]}" --create --topic t-plain --partitions 1 --replication-factor 1
CC=(kafka.admin.ConfigCommand --bootstrap-server "$BOOT")
tool "${CC[@]}" --alter --entity-type brokers --entity-default --add-config log.cleaner.backoff.ms=20000
tool "${CC[@]}" --alter --entity-type brokers --entity-name 1 --add-config log.cleaner.threads=1
tool "${CC[@]}" --alter --entity-type users --entity-name alice \
  --add-config 'SCRAM-SHA-256=[iterations=4096,password=alice-secret]'
tool "${CC[@]}" --alter --entity-type users --entity-name alice --add-config producer_byte_rate=1048576
tool "${CC[@]}" --alter --entity-type clients --entity-name app1 --add-config consumer_byte_rate=2097152
tool "${CC[@]}" --alter --entity-type ips --entity-name 127.0.0.2 --add-config connection_creation_rate=50
AC=(kafka.admin.AclCommand --bootstrap-server "$BOOT")
tool "${AC[@]}" --add --allow-principal User:alice --operation Read --operation Describe --topic t-rf3
tool "${AC[@]}" --add --allow-principal User:alice --operation Read --group g- --resource-pattern-type prefixed
produce t-rf3 30 A
produce t-compact 10 A
tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOT" --topic t-rf3 \
  --group g1 --from-beginning --max-messages 30 >"$RUN/consumed-A.txt"
log "consumed $(wc -l <"$RUN/consumed-A.txt") from t-rf3 with group g1"
wait_no_urp "$BOOT"
tool "${CC[@]}" --describe --entity-type topics --all >"$OUT/configs-A.txt" 2>&1 || true
zkdump A-zk-cluster
CLUSTER_ID=$(PYTHONPATH="${KAZOO_PATH:-}" "$PY" -c "import json,sys;print(json.load(open(sys.argv[1]))['/cluster/id']['data']['id'])" "$OUT/znodes-A-zk-cluster.json")
log "cluster id $CLUSTER_ID"

# ---------------------------------------------------------------- phase B: controllers, then brokers with migration
log "phase B: 3 KRaft controllers with zookeeper.metadata.migration.enable=true"
for c in "${CONTROLLERS[@]}"; do
  controller "$c" true >"$RUN/c$c.mig.properties"
  tool kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$RUN/c$c.mig.properties" >>"$OUT/format.txt" 2>&1
  start_java "c$c" 384m kafka.Kafka "$RUN/c$c.mig.properties"
done
for c in "${CONTROLLERS[@]}"; do wait_log "$RUN/c$c.log" "Kafka Server started" 180; done
# The active controller waits for ZK brokers with migration enabled.
for _ in $(seq 1 60); do grep -q "WAIT_FOR_BROKERS\|WAIT_FOR_CONTROLLER_QUORUM" "$RUN"/c*.log && break; sleep 1; done
zkdump B1-controllers-up
quorum B1-controllers-up

for b in "${BROKERS[@]}"; do
  stop_java "b$b"
  mig_broker "$b" >"$RUN/b$b.mig.properties"
  start_java "b$b" 384m kafka.Kafka "$RUN/b$b.mig.properties"
  if [ "$b" = "${BROKERS[-1]}" ] && [ "${FAULT_DURING_LOAD:-0}" = 1 ]; then kill_during_load; fi
  wait_log "$RUN/b$b.log" "\[KafkaServer id=$b\] started" 180
  # after a failover during the load Kafka 3.9 may leave replicas out of the ISR (migration-plan.md §6)
  if [ "$b" != "${BROKERS[-1]}" ] || [ "${FAULT_DURING_LOAD:-0}" != 1 ]; then wait_no_urp "$BOOT"; fi
done
for _ in $(seq 1 300); do
  grep -q "Completed migration of metadata from ZooKeeper to KRaft" "$RUN"/c*.log && break
  sleep 1
done
grep -h "Completed migration of metadata from ZooKeeper to KRaft" "$RUN"/c*.log | tee -a "$OUT/timeline.txt"
sleep 5  # let the first dual-write/propagation round settle before capturing (not a wait for state)
zkdump B2-migrated
quorum B2-migrated
ACTIVE=$(grep -l "Completed migration of metadata from ZooKeeper to KRaft" "$RUN"/c*.log | head -1 | sed 's/.*\/c\([0-9]*\)\.log/\1/')
log "active controller $ACTIVE"
dump_metadata B2-migrated "$ACTIVE"
if [ "${FAULT_DURING_LOAD:-0}" = 1 ]; then
  summarise
  log "FAULT_DURING_LOAD: stopped after the load"
  exit 0
fi

# ---------------------------------------------------------------- phase B3: dual-write changes
log "phase B3: metadata changes while dual-writing (ZK-mode brokers)"
tool "${TC[@]}" --create --topic t-new --partitions 2 --replication-factor 2 --config retention.bytes=1048576
tool "${CC[@]}" --alter --entity-type topics --entity-name t-rf3 --add-config retention.ms=3600000
tool "${CC[@]}" --alter --entity-type brokers --entity-default --add-config log.cleaner.backoff.ms=25000
tool "${CC[@]}" --alter --entity-type users --entity-name bob \
  --add-config 'SCRAM-SHA-512=[iterations=8192,password=bob-secret]'
tool "${CC[@]}" --alter --entity-type users --entity-name alice --add-config producer_byte_rate=2097152
tool "${AC[@]}" --add --allow-principal User:bob --operation Write --topic t-new
tool "${TC[@]}" --delete --topic t-plain
tool "${TC[@]}" --alter --topic t-compact --partitions 3
produce t-rf3 30 B
produce t-new 10 B
wait_no_urp "$BOOT"
zkdump B3-dual-write
dump_metadata B3-dual-write "$ACTIVE"

# ---------------------------------------------------------------- phase B4: failover while dual-writing
log "phase B4: active controller $ACTIVE SIGKILLed while dual-writing"
kill -9 "$(cat "$RUN/pids/c$ACTIVE.pid")"
rm -f "$RUN/pids/c$ACTIVE.pid"
for _ in $(seq 1 120); do
  NEW=$(grep -l "transitioning from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE" "$RUN"/c*.log \
    | grep -v "c$ACTIVE.log" | head -1 | sed 's/.*\/c\([0-9]*\)\.log/\1/') || true
  [ -n "$NEW" ] && break
  sleep 1
done
log "controller ${NEW:-none} took over the migration driver"
zkdump B4-failover
start_java "c$ACTIVE" 384m kafka.Kafka "$RUN/c$ACTIVE.mig.properties"
wait_log "$RUN/c$ACTIVE.log" "Kafka Server started" 180
wait_no_urp "$BOOT"

# ---------------------------------------------------------------- phase B5 (optional): ZooKeeper restart
if [ "${FAULT_ZK_RESTART:-0}" = 1 ]; then
  log "phase B5: ZooKeeper stopped while dual-writing"
  stop_java zk
  # to the controllers: a ZK broker reads a topic's configs from ZooKeeper before altering them
  tool kafka.admin.ConfigCommand --bootstrap-controller "$CBOOT" --alter --entity-type topics \
    --entity-name t-rf3 --add-config retention.ms=5400000
  log "t-rf3 retention.ms=5400000 committed in KRaft with ZooKeeper down"
  sleep 5  # keep ZooKeeper down a while, below zookeeper.session.timeout.ms (18 s)
  start_java zk 192m org.apache.zookeeper.server.quorum.QuorumPeerMain "$RUN/zk.properties"
  wait_port "$ZK_PORT" 60
  for _ in $(seq 1 120); do
    zkdump B5-zk-restarted
    grep -q '5400000' "$OUT/znodes-B5-zk-restarted.json" && break
    sleep 1
  done
  log "ZooKeeper restarted; t-rf3 retention.ms in ZooKeeper: $(grep -o 'retention.ms[^,]*5400000' "$OUT/znodes-B5-zk-restarted.json" | head -1)"
  wait_no_urp "$BOOT"
fi

# ---------------------------------------------------------------- phase C: brokers rolled to KRaft
log "phase C: brokers rolled to KRaft mode"
for b in "${BROKERS[@]}"; do
  stop_java "b$b"
  cp "$RUN/b$b/data/meta.properties" "$OUT/meta.properties-b$b-before-kraft" 2>/dev/null || true
  kraft_broker "$b" >"$RUN/b$b.kraft.properties"
  start_java "b$b" 384m kafka.Kafka "$RUN/b$b.kraft.properties"
  wait_log "$RUN/b$b.log" "Kafka Server started" 180
  cp "$RUN/b$b/data/meta.properties" "$OUT/meta.properties-b$b-after-kraft"
  wait_no_urp "$BOOT"
done
produce t-rf3 30 C
tool "${CC[@]}" --alter --entity-type topics --entity-name t-new --add-config retention.ms=7200000
wait_no_urp "$BOOT"
zkdump C-brokers-kraft
quorum C-brokers-kraft

# ---------------------------------------------------------------- phase D: finalisation
log "phase D: controllers restarted without migration (finalisation)"
for c in "${CONTROLLERS[@]}"; do
  stop_java "c$c"
  controller "$c" false >"$RUN/c$c.kraft.properties"
  start_java "c$c" 384m kafka.Kafka "$RUN/c$c.kraft.properties"
  wait_log "$RUN/c$c.log" "Kafka Server started" 180
done
wait_no_urp "$BOOT"
tool "${CC[@]}" --alter --entity-type topics --entity-name t-rf3 --add-config retention.ms=1800000
tool "${TC[@]}" --create --topic t-after --partitions 1 --replication-factor 3
produce t-rf3 30 D
wait_no_urp "$BOOT"
zkdump D-finalised
quorum D-finalised
LEADER=$(tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$CBOOT" describe --status | awk '/^LeaderId/{print $2}')
dump_metadata D-finalised "$LEADER"

# ---------------------------------------------------------------- checks
tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOT" --topic t-rf3 \
  --from-beginning --timeout-ms 20000 >"$RUN/consumed-all.txt" 2>/dev/null || true
log "t-rf3 holds $(wc -l <"$RUN/consumed-all.txt") messages, $(sort -u "$RUN/consumed-all.txt" | wc -l) distinct (120 produced)"
tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$BOOT" \
  --describe --group g1 >"$OUT/group-g1-after.txt" 2>&1 || true
tool "${CC[@]}" --describe --entity-type topics --all >"$OUT/configs-D.txt" 2>&1 || true
tool "${AC[@]}" --list >"$OUT/acls-D.txt" 2>&1 || true
tool "${CC[@]}" --describe --entity-type users >"$OUT/users-D.txt" 2>&1 || true
tool "${TC[@]}" --describe >"$OUT/topics-D.txt" 2>&1 || true
summarise
log "done"
