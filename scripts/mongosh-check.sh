#!/usr/bin/env bash
# Drives a 3-process mongosim replica set with mongosh, a real MongoDB client
# nobody here wrote: rs.initiate, rs.status, serverStatus, CRUD, aggregate,
# currentOp and killOp must all work without errors.
# mongosh comes from the npm registry into .tools/ (pinned); without npm the
# check is skipped with a message, never silently.
set -euo pipefail
cd "$(dirname "$0")/.."
MONGOSH_VERSION=2.12.0
TOOLS=.tools
MONGOSH=$TOOLS/node_modules/.bin/mongosh

if [ ! -x "$MONGOSH" ] || [ "$("$MONGOSH" --version 2>/dev/null)" != "$MONGOSH_VERSION" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "mongosh-check: SKIPPED: npm is not installed, so mongosh cannot be fetched"
    exit 0
  fi
  echo "mongosh-check: installing mongosh@$MONGOSH_VERSION into $TOOLS"
  mkdir -p "$TOOLS"
  npm install --no-audit --no-fund --silent --prefix "$TOOLS" "mongosh@$MONGOSH_VERSION" >/dev/null
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # Commands a real client sent that mongosim does not simulate.
  grep -ho '"msg":"command not simulated","[^}]*' "$work"/m*.log 2>/dev/null | sort | uniq -c || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Free loopback ports, picked by the kernel.
read -r p0 p1 p2 < <(python3 -c 'import socket
ss=[socket.socket() for _ in range(3)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(*[s.getsockname()[1] for s in ss])')
for p in $p0 $p1 $p2; do
  mkdir -p "$work/db$p"
  bin/mongosim --replSet rs0 --port "$p" --bind_ip 127.0.0.1 --dbpath "$work/db$p" --logpath "$work/m$p.log" &
  pids+=($!); disown $!
done
sh() { "$MONGOSH" --quiet --norc "$@"; }
for _ in $(seq 50); do sh "mongodb://127.0.0.1:$p0/?directConnection=true" --eval 'db.adminCommand({ping:1}).ok' >/dev/null 2>&1 && break; sleep 0.1; done

sh "mongodb://127.0.0.1:$p0/?directConnection=true" --eval "
rs.initiate({_id: 'rs0', settings: {electionTimeoutMillis: 2000}, members: [
  {_id: 0, host: '127.0.0.1:$p0'}, {_id: 1, host: '127.0.0.1:$p1'}, {_id: 2, host: '127.0.0.1:$p2'}]});
" >/dev/null

uri="mongodb://127.0.0.1:$p1/?replicaSet=rs0"
# A second mongosh runs a long sleep for the first one to find and kill.
sh "$uri&appName=mongosh-sleeper" --eval 'try { db.adminCommand({sleep: 1, secs: 60}); print("returned") } catch (e) { print("error code=" + e.code + " codeName=" + e.codeName); quit(3) }' >"$work/sleeper.out" 2>&1 &
sleeper=$!
out=$(sh "$uri" --file scripts/mongosh-check.js 2>&1) || { echo "$out"; echo "mongosh-check: FAILED"; exit 1; }
echo "$out"
echo "$out" | grep -q '^mongosh-check: all good$' || { echo "mongosh-check: FAILED"; exit 1; }
if wait "$sleeper"; then echo "mongosh-check: FAILED: the killed sleep returned normally"; exit 1; fi
if grep -q 'code=11601 codeName=Interrupted' "$work/sleeper.out"; then
  echo "ok - the killed sleep failed in the other mongosh with $(cat "$work/sleeper.out")"
else
  cat "$work/sleeper.out"; echo "mongosh-check: FAILED: the killed sleep did not fail with Interrupted"; exit 1
fi
