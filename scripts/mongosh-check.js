// Run by scripts/mongosh-check.sh with mongosh against a mongosim set.
function check(cond, what) {
  if (!cond) { throw new Error('check failed: ' + what); }
  print('ok - ' + what);
}
let primary = null;
for (const until = Date.now() + 120 * 1000; !primary && Date.now() < until;) {
  const st = rs.status();
  const p = st.members.filter(m => m.stateStr === 'PRIMARY');
  if (p.length === 1) { primary = p[0].name; } else { sleep(100); }
}
check(primary !== null, 'rs.status() shows a PRIMARY (' + primary + ')');
const st = rs.status();
check(st.set === 'rs0' && st.members.length === 3, 'rs.status() lists 3 members of rs0');

const ss = db.serverStatus();
check(ss.ok === 1 && ss.mongosim.simulated === true, 'db.serverStatus() works and says it is simulated');

const c = db.getSiblingDB('shcheck').events;
c.drop();
check(c.insertOne({_id: 1, g: 'a', v: 10}).acknowledged, 'insertOne');
c.insertMany([{_id: 2, g: 'a', v: 5}, {_id: 3, g: 'b', v: 7}]);
check(c.find({v: {$gte: 6}}).sort({v: 1}).toArray().map(d => d._id).join(',') === '3,1', 'find with range + sort');
check(c.countDocuments({g: 'a'}) === 2, 'countDocuments');
const agg = c.aggregate([{$group: {_id: '$g', total: {$sum: '$v'}}}, {$sort: {_id: 1}}]).toArray();
check(agg.length === 2 && agg[0].total === 15, 'aggregate $group');
const win = c.aggregate([{$setWindowFields: {sortBy: {_id: 1}, output: {run: {$sum: '$v', window: {documents: ['unbounded', 'current']}}}}}]).toArray();
check(win.map(d => d.run).join(',') === '10,15,22', 'aggregate $setWindowFields running sum');

const opened = db.getSiblingDB('shcheck').runCommand({find: 'events', batchSize: 1});
const idle = db.getSiblingDB('admin').aggregate([{$currentOp: {idleCursors: true}},
  {$match: {type: 'idleCursor', ns: 'shcheck.events'}}]).toArray();
check(idle.length === 1 && idle[0].cursor.cursorId.toString() === opened.cursor.id.toString() &&
  idle[0].cursor.nDocsReturned.toString() === '1' && idle[0].cursor.originatingCommand.find === 'events',
  '$currentOp with idleCursors lists the open find cursor (' + opened.cursor.id + ')');
db.getSiblingDB('shcheck').runCommand({killCursors: 'events', cursors: [opened.cursor.id]});

// The other mongosh starts beside this one and waits for a primary
// before it sends its sleep: on a loaded machine that takes a while, so
// the wait is for the event, bounded well inside the sleep's own length.
let sleeper = [];
const until = Date.now() + 180 * 1000;
while (sleeper.length === 0 && Date.now() < until) {
  sleeper = db.currentOp({appName: 'mongosh-sleeper', 'command.sleep': {$exists: true}}).inprog;
  if (sleeper.length === 0) { sleep(100); }
}
check(sleeper.length === 1, 'db.currentOp() finds the other shell\'s sleep (opid ' + (sleeper[0] || {}).opid + ')');
const killed = db.killOp(sleeper[0].opid);
check(killed.ok === 1 && killed.info === 'attempting to kill op', 'db.killOp() of that op');
print('mongosh-check: all good');
