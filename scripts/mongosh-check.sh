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

# Loopback ports below the kernel's ephemeral range (an outgoing connection
# cannot take them between our check and mongosim's bind); a member that
# still fails to bind is retried on another port.
lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
pick_port() { python3 -c "import random,socket
for _ in range(200):
    p=random.randrange(10000,$lo); s=socket.socket()
    try: s.bind(('127.0.0.1',p)); s.close(); print(p); break
    except OSError: pass"; }
ports=()
for i in 0 1 2; do
  for attempt in 1 2 3 4 5; do
    p=$(pick_port)
    mkdir -p "$work/db$p"
    bin/mongosim --replSet rs0 --port "$p" --bind_ip 127.0.0.1 --dbpath "$work/db$p" --logpath "$work/m$p.log" &
    pid=$!; disown $pid
    up=""
    for _ in $(seq 50); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then up=1; break; fi
      sleep 0.05
    done
    if [ -n "$up" ]; then pids+=("$pid"); ports+=("$p"); break; fi
    kill -9 "$pid" 2>/dev/null || true
  done
done
[ ${#ports[@]} -eq 3 ] || { echo "mongosh-check: FAILED: could not start 3 mongosim members"; exit 1; }
p0=${ports[0]}; p1=${ports[1]}; p2=${ports[2]}
sh() { "$MONGOSH" --quiet --norc "$@"; }

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
