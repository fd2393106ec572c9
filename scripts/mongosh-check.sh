#!/usr/bin/env bash
# Drives a 3-process mongosim replica set with mongosh, a real MongoDB client
# nobody here wrote: rs.initiate, rs.status, serverStatus, CRUD, aggregate,
# $currentOp with idleCursors, currentOp and killOp must all work without
# errors; then a sharded mongosim
# cluster with sh.status, sh.enableSharding, sh.shardCollection and a $merge
# through the router (MONGOSH_CHECK_PART=sharded runs only that part;
# MONGOSH_CHECK_PART=install only installs mongosh).
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
# MONGOSH_CHECK_PART=install only installs (make tools).
if [ "${MONGOSH_CHECK_PART:-}" = install ]; then
  exit 0
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
# start_member <port-var> <args...>: start bin/mongosim on a free port.
start_member() {
  local var=$1; shift
  for attempt in 1 2 3 4 5; do
    local p; p=$(pick_port)
    mkdir -p "$work/db$p"
    bin/mongosim "$@" --port "$p" --bind_ip 127.0.0.1 --logpath "$work/m$p.log" &
    local pid=$!; disown $pid
    # Until it listens (up to 60 s: a loaded machine starts it slowly), or
    # exits (its port was taken: another port is tried).
    for _ in $(seq 1200); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then pids+=("$pid"); printf -v "$var" %s "$p"; return 0; fi
      sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || true
  done
  return 1
}
sh() { "$MONGOSH" --quiet --norc "$@"; }

# The sharded part: a --configsvr set, two --shardsvr sets and a router
# (cmd/mongosim --router), driven with mongosh's sh.* helpers and a $merge
# through the router. MONGOSH_CHECK_PART=sharded runs only this part.
sharded_check() {
  local cfg sh0 sh1 router
  start_member cfg --configsvr --replSet cfg || { echo "mongosh-check: FAILED: config server did not start"; exit 1; }
  start_member sh0 --shardsvr --replSet sh0 || { echo "mongosh-check: FAILED: shard sh0 did not start"; exit 1; }
  start_member sh1 --shardsvr --replSet sh1 || { echo "mongosh-check: FAILED: shard sh1 did not start"; exit 1; }
  for set in cfg sh0 sh1; do
    local port=${!set}
    sh "mongodb://127.0.0.1:$port/?directConnection=true" --eval "rs.initiate({_id: '$set', members: [{_id: 0, host: '127.0.0.1:$port'}]})" >/dev/null
  done
  start_member router --router --configdb "cfg/127.0.0.1:$cfg" || { echo "mongosh-check: FAILED: router did not start"; exit 1; }
  local out
  out=$(sh "mongodb://127.0.0.1:$router/" --eval "
const ok = (what, cond) => { if (!cond) { print('FAILED: ' + what); quit(1) } print('ok - ' + what) };
ok('addShard sh0', sh.addShard('sh0/127.0.0.1:$sh0').shardAdded === 'sh0');
ok('addShard sh1', sh.addShard('sh1/127.0.0.1:$sh1').shardAdded === 'sh1');
ok('sh.enableSharding', sh.enableSharding('app', 'sh0').ok === 1);
ok('sh.shardCollection hashed', sh.shardCollection('app.orders', {cust: 'hashed'}).collectionsharded === 'app.orders');
const app = db.getSiblingDB('app');
app.orders.insertMany(Array.from({length: 200}, (_, i) => ({_id: i, cust: i, amount: i % 7})));
ok('find by shard key through the router', app.orders.findOne({cust: 42}).amount === 0);
ok('count over both shards', app.orders.countDocuments({}) === 200);
app.orders.aggregate([{\$match: {amount: {\$gte: 0}}}, {\$merge: {into: 'orders_copy'}}]).toArray();
ok('\$merge of a sharded source into an unsharded target', app.orders_copy.countDocuments({}) === 200);
app.src.insertMany(Array.from({length: 50}, (_, i) => ({_id: i, v: i, bucket: i % 5})));
app.src.aggregate([{\$group: {_id: '\$bucket', n: {\$sum: 1}}}, {\$merge: {into: 'by_mod'}}]).toArray();
ok('\$merge through the router wrote its output', app.by_mod.countDocuments({}) === 5);
// sh.status(): what mongosh derives from config.* through the router
// (finds, and aggregates with \$group, \$project, \$ifNull and \$sort).
const st = sh.status().value;
const show = (v) => EJSON.stringify(v);
ok('sh.status lists exactly the two shards, by _id: ' + show(st.shards.map(s => s._id)),
  show(st.shards.map(s => [s._id, s.host])) === show([['sh0', 'sh0/127.0.0.1:$sh0'], ['sh1', 'sh1/127.0.0.1:$sh1']]));
ok('sh.status counts one active mongos: ' + show(st['active mongoses']),
  Array.isArray(st['active mongoses']) && st['active mongoses'].length === 1 && Object.values(st['active mongoses'][0])[0] === 1);
ok('sh.status reports no recent migrations (chunks never move): ' + show(st.balancer),
  st.balancer['Migration Results for the last 24 hours'] === 'No recent migrations' && st.balancer['Currently running'] === 'no');
const appEntry = st.databases.find(e => e.database._id === 'app');
ok('sh.status lists database app with primary sh0', appEntry !== undefined && appEntry.database.primary === 'sh0');
ok('sh.status lists app.orders as the only sharded collection of app: ' + show(Object.keys(appEntry.collections)),
  show(Object.keys(appEntry.collections)) === show(['app.orders']));
const orders = appEntry.collections['app.orders'];
ok('sh.status gives app.orders its hashed shard key', show(orders.shardKey) === show({cust: 'hashed'}));
// The chunk counts per shard, against config.chunks read directly: a
// hashed key on an empty collection starts with 2 chunks per shard.
const cfgChunks = db.getSiblingDB('config').chunks;
const uuid = db.getSiblingDB('config').collections.findOne({_id: 'app.orders'}).uuid;
const direct = ['sh0', 'sh1'].map(s => ({shard: s, nChunks: cfgChunks.countDocuments({uuid: uuid, shard: s})}));
ok('sh.status chunk counts per shard ' + show(orders.chunkMetadata) + ' match config.chunks ' + show(direct),
  show(orders.chunkMetadata) === show(direct) && direct.every(c => c.nChunks === 2));
const ch = orders.chunks;
ok('sh.status chunk list covers the key space: MinKey to MaxKey, each chunk starting where the previous ends, on sh0 and sh1',
  ch.length === 4 && ch[0].min.cust instanceof MinKey && ch[3].max.cust instanceof MaxKey &&
  ch.every((c, i) => i === 0 || show(c.min) === show(ch[i - 1].max)) &&
  show([...new Set(ch.map(c => c['on shard']))].sort()) === show(['sh0', 'sh1']));
const dist = st.shardedDataDistribution;
ok('sh.status data distribution: app.orders on sh0 and sh1, 200 documents owned, no orphans: ' + show(dist),
  Array.isArray(dist) && dist.length === 1 && dist[0].ns === 'app.orders' &&
  show(dist[0].shards.map(s => s.shardName)) === show(['sh0', 'sh1']) &&
  dist[0].shards.every(s => Number(s.numOwnedDocuments) > 0 && Number(s.ownedSizeBytes) > 0 && Number(s.numOrphanedDocs) === 0) &&
  dist[0].shards.reduce((n, s) => n + Number(s.numOwnedDocuments), 0) === 200);
print('mongosh-check: sharded all good');
" 2>&1) || { echo "$out"; echo "mongosh-check: FAILED (sharded)"; exit 1; }
  echo "$out"
  echo "$out" | grep -q '^mongosh-check: sharded all good$' || { echo "mongosh-check: FAILED (sharded)"; exit 1; }
}
if [ "${MONGOSH_CHECK_PART:-}" = sharded ]; then
  sharded_check
  exit 0
fi

ports=()
for i in 0 1 2; do
  for attempt in 1 2 3 4 5; do
    p=$(pick_port)
    mkdir -p "$work/db$p"
    bin/mongosim --replSet rs0 --port "$p" --bind_ip 127.0.0.1 --dbpath "$work/db$p" --logpath "$work/m$p.log" &
    pid=$!; disown $pid
    up=""
    for _ in $(seq 1200); do # as start_member waits
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

sh "mongodb://127.0.0.1:$p0/?directConnection=true" --eval "
rs.initiate({_id: 'rs0', settings: {electionTimeoutMillis: 2000}, members: [
  {_id: 0, host: '127.0.0.1:$p0'}, {_id: 1, host: '127.0.0.1:$p1'}, {_id: 2, host: '127.0.0.1:$p2'}]});
" >/dev/null

uri="mongodb://127.0.0.1:$p1/?replicaSet=rs0"
# A second mongosh runs a long sleep for the first one to find and kill.
# Its sleep outlasts the first one's wait for it (180 s) whatever the load.
sh "$uri&appName=mongosh-sleeper" --eval 'try { db.adminCommand({sleep: 1, secs: 600}); print("returned") } catch (e) { print("error code=" + e.code + " codeName=" + e.codeName); quit(3) }' >"$work/sleeper.out" 2>&1 &
sleeper=$!
out=$(sh "$uri" --file scripts/mongosh-check.js 2>&1) || { echo "$out"; echo "the other mongosh said: $(cat "$work/sleeper.out")"; echo "mongosh-check: FAILED"; exit 1; }
echo "$out"
echo "$out" | grep -q '^mongosh-check: all good$' || { echo "mongosh-check: FAILED"; exit 1; }
if wait "$sleeper"; then echo "mongosh-check: FAILED: the killed sleep returned normally"; exit 1; fi
if grep -q 'code=11601 codeName=Interrupted' "$work/sleeper.out"; then
  echo "ok - the killed sleep failed in the other mongosh with $(cat "$work/sleeper.out")"
else
  cat "$work/sleeper.out"; echo "mongosh-check: FAILED: the killed sleep did not fail with Interrupted"; exit 1
fi
sharded_check
