#!/usr/bin/env bash
# `make demo`: format a standalone KRaft controller directory and show what is on disk.
# Everything goes to ./data/demo (removed first), nothing listens on the network.
set -euo pipefail
cd "$(dirname "$0")/.."
PYKRAFT=.venv/bin/pykraft
DEMO=data/demo
rm -rf "$DEMO"
mkdir -p "$DEMO"
cat > "$DEMO/controller.properties" <<PROPS
process.roles=controller
node.id=1
listeners=CONTROLLER://127.0.0.1:19093
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=127.0.0.1:19093
log.dirs=$DEMO/metadata
PROPS
CLUSTER_ID=$("$PYKRAFT" storage random-uuid)
echo "== pykraft storage format --standalone (cluster id $CLUSTER_ID)"
"$PYKRAFT" storage format --config "$DEMO/controller.properties" --cluster-id "$CLUSTER_ID" --standalone
echo
echo "== pykraft storage info"
"$PYKRAFT" storage info --config "$DEMO/controller.properties"
echo "== pykraft dump-log of the bootstrap files"
"$PYKRAFT" dump-log --cluster-metadata-decoder \
  --files "$DEMO/metadata/bootstrap.checkpoint,$DEMO/metadata/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
echo
echo "== pykraft cluster up --detach: a 3-controller static quorum on 127.0.0.1"
CLUSTER=data/demo/cluster
"$PYKRAFT" cluster up --controllers 3 --dir "$CLUSTER" --detach
trap '"$PYKRAFT" cluster down --dir "$CLUSTER"' EXIT
BOOTSTRAP=$(.venv/bin/python -c "import json,sys; n=json.load(open(sys.argv[1]))['nodes'][0]; print(f\"127.0.0.1:{n['port']}\")" "$CLUSTER/cluster.json")
echo "== pykraft metadata-quorum --bootstrap-controller $BOOTSTRAP describe --status"
"$PYKRAFT" metadata-quorum --bootstrap-controller "$BOOTSTRAP" describe --status --timeout 30
echo
echo "== ... describe --replication --human-readable"
"$PYKRAFT" metadata-quorum --bootstrap-controller "$BOOTSTRAP" describe --replication --human-readable
