#!/usr/bin/env bash
# `make cluster` as a new user runs it, again and again (issue 12: the second run refused).
#
#   1. `make cluster` in the foreground of its own process group, stopped with Ctrl-C (SIGINT
#      to the group) once the quorum has a leader;
#   2. `make cluster` again: the stopped cluster restarts on its data (same cluster id);
#      `pykraft cluster down` stops it;
#   3. `make cluster` once more after `down`, then `down` and `pykraft cluster delete`.
#
# Run it from a fresh clone (the first `make` sets up .venv). It uses its own cluster
# directory (CHECK_DIR, default data/check-make-cluster, which must not exist yet), every wait
# is bounded, and on exit it stops what it started by PID: the `make` process group it
# spawned and the servers recorded in the cluster's cluster.json.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${CHECK_DIR:-data/check-make-cluster}
PYKRAFT=.venv/bin/pykraft
STEP_S=90
LOG=$(mktemp)
MAKE_PID=

if [[ -e "$DIR" ]]; then
  echo "check_make_cluster: $DIR exists; remove it or set CHECK_DIR" >&2
  exit 2
fi

cleanup() {
  if [[ -n "$MAKE_PID" ]] && kill -0 "$MAKE_PID" 2>/dev/null; then
    kill -TERM -- "-$MAKE_PID" 2>/dev/null || true
  fi
  if [[ -f "$DIR/cluster.json" ]]; then
    "$PYKRAFT" cluster delete --dir "$DIR" >/dev/null || true
  fi
  rm -f "$LOG"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- output of the last step:" >&2
  cat "$LOG" >&2
  exit 1
}

echo "== make setup (the first run in a fresh clone creates .venv)"
timeout 1800 make setup >/dev/null

bootstrap() {
  .venv/bin/python -c "import json,sys; print(','.join(f\"127.0.0.1:{n['port']}\" \
for n in json.load(open(sys.argv[1]))['nodes']))" "$DIR/cluster.json"
}

cluster_id() {
  .venv/bin/python -c "import json,sys; print(json.load(open(sys.argv[1]))['cluster_id'])" \
    "$DIR/cluster.json"
}

wait_for_leader() {
  local deadline=$((SECONDS + STEP_S))
  until [[ -f "$DIR/cluster.json" ]] && "$PYKRAFT" metadata-quorum \
      --bootstrap-controller "$(bootstrap)" describe --status --timeout 5 >>"$LOG" 2>&1; do
    ((SECONDS < deadline)) || fail "no leader within $STEP_S s"
    sleep 1
  done
}

echo "== 1. make cluster (foreground), Ctrl-C once it has a leader"
# Job control puts the job in its own process group with SIGINT at its default (a plain
# background job of a script ignores SIGINT, and so would make and pykraft).
set -m
make --no-print-directory cluster CLUSTER_DIR="$DIR" >"$LOG" 2>&1 &
MAKE_PID=$!
set +m
wait_for_leader
FIRST_ID=$(cluster_id)
kill -INT -- "-$MAKE_PID"  # what Ctrl-C sends to the terminal's foreground group
deadline=$((SECONDS + STEP_S))
while kill -0 "$MAKE_PID" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "make cluster still runs $STEP_S s after Ctrl-C"
  sleep 0.2
done
wait "$MAKE_PID" || true
MAKE_PID=
grep -q "Stopped: node 1 exit 0, node 2 exit 0, node 3 exit 0\." "$LOG" \
  || fail "Ctrl-C did not stop every node cleanly"
echo "   cluster $FIRST_ID started and stopped"

for run in 2 3; do
  echo "== $run. make cluster CLUSTER_ARGS=--detach, then pykraft cluster down"
  timeout "$STEP_S" make --no-print-directory cluster CLUSTER_DIR="$DIR" \
    CLUSTER_ARGS=--detach >"$LOG" 2>&1 || fail "make cluster (run $run) failed"
  grep -q "^Restarted 3 controllers and 0 brokers of cluster $FIRST_ID;" "$LOG" \
    || fail "run $run did not restart cluster $FIRST_ID"
  wait_for_leader
  timeout "$STEP_S" "$PYKRAFT" cluster down --dir "$DIR" >"$LOG" 2>&1 \
    || fail "cluster down (run $run) failed"
  echo "   cluster $FIRST_ID restarted and stopped"
done

"$PYKRAFT" cluster delete --dir "$DIR" >"$LOG" 2>&1 || fail "cluster delete failed"
[[ ! -e "$DIR" ]] || fail "$DIR is still there after cluster delete"
echo "OK: make cluster ran 3 times (Ctrl-C, then down, in between); the cluster is deleted"
