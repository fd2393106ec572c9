package mongosim_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/wire"
)

// fastFTDC samples ten times a second and rewrites the interim file every
// two samples, so a test sees several samples and an interim file quickly.
var fastFTDC = map[string]string{"diagnosticDataCollectionPeriodMillis": "100", "diagnosticDataCollectionSamplesPerInterimUpdate": "2"}

type ftdcSample struct {
	at     int64
	values map[string]int64
}

func readFTDC(t *testing.T, dir string) (meta []bson.Raw, samples []ftdcSample, chunks []*ftdc.Chunk) {
	t.Helper()
	docs, err := ftdc.ReadAll(dir)
	if err != nil {
		t.Fatalf("%s does not read back: %v", dir, err)
	}
	for _, d := range docs {
		if d.Type == ftdc.TypeMetadata {
			meta = append(meta, d.Doc)
		}
	}
	samples, chunks, err = samplesOf(docs)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return meta, samples, chunks
}

// samplesOf is the samples of docs' metric chunks, each once and in time
// order (the interim chunk repeats samples already archived), and the
// chunks; err is the first chunk that did not decode (the others are
// still read).
func samplesOf(docs []*ftdc.Document) (samples []ftdcSample, chunks []*ftdc.Chunk, err error) {
	last := int64(0)
	for _, d := range docs {
		if d.Type != ftdc.TypeMetricChunk {
			continue
		}
		c, cerr := d.Chunk()
		if cerr != nil {
			err = cmp.Or(err, cerr)
			continue
		}
		chunks = append(chunks, c)
		for _, s := range c.Samples() {
			if s.Time() <= last {
				continue
			}
			last = s.Time()
			v := map[string]int64{}
			for i, m := range c.Metrics {
				v[m.Path] = s.At(i)
			}
			samples = append(samples, ftdcSample{s.Time(), v})
		}
	}
	return samples, chunks, err
}

func TestMemberWritesDiagnosticDataLikeMongod(t *testing.T) {
	dbpath := t.TempDir()
	dir := mongosim.DiagnosticDataDir(dbpath)
	start := func() *mongosim.Server {
		srv, err := mongosim.Start(mongosim.Options{Port: 0, Storage: &mongosim.DirStorage{Dir: dbpath}, Parameters: fastFTDC})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	waitForSamples(t, dir, 2)
	srv.Kill() // as SIGKILL: the chunk being built stays in metrics.interim
	if _, err := os.Stat(filepath.Join(dir, ftdc.InterimFile)); err != nil {
		t.Fatalf("a killed member must leave its interim file: %v", err)
	}
	meta, before, _ := readFTDC(t, dir)
	if len(before) < 2 {
		t.Fatalf("%d samples readable after the kill, want the interim file's", len(before))
	}
	if len(meta) != 1 {
		t.Fatalf("%d metadata documents, want one at the start of the file", len(meta))
	}
	if sim, _ := meta[0].Lookup("buildInfo", "mongosim", "simulated").BooleanOK(); !sim {
		t.Errorf("the metadata's buildInfo must say it is simulated: %v", meta[0])
	}
	for _, k := range []string{"buildInfo", "getCmdLineOpts", "hostInfo"} {
		if _, err := meta[0].LookupErr(k); err != nil {
			t.Errorf("metadata lacks %s", k)
		}
	}
	for _, p := range []string{"start", "end", "serverStatus.start", "serverStatus.uptimeMillis", "serverStatus.mem.resident",
		"serverStatus.queues.execution.read.lowPriority.queueLength", "serverStatus.mongosim.simulated", "serverStatus.end"} {
		if _, ok := before[0].values[p]; !ok {
			t.Errorf("sample lacks %s", p)
		}
	}
	if before[0].values["serverStatus.mongosim.simulated"] != 1 {
		t.Error("every sample's serverStatus must say it is simulated")
	}

	// A restart in the same dbpath takes the interim chunk into its first
	// file; a clean shutdown archives everything.
	srv = start()
	waitForSamples(t, dir, len(before)+3)
	srv.Shutdown()
	if _, err := os.Stat(filepath.Join(dir, ftdc.InterimFile)); !os.IsNotExist(err) {
		t.Errorf("after a clean shutdown no interim file may remain (%v)", err)
	}
	files, _ := ftdc.Files(dir)
	if len(files) != 2 {
		t.Errorf("files %v: want one archive file per process", files)
	}
	meta, after, _ := readFTDC(t, dir)
	if len(meta) != 2 {
		t.Errorf("%d metadata documents, want one per file", len(meta))
	}
	if len(after) < len(before)+3 {
		t.Fatalf("%d samples after the restart, %d before: the first process's samples must survive", len(after), len(before))
	}
	for i := range before {
		if after[i].at != before[i].at || after[i].values["serverStatus.uptimeMillis"] != before[i].values["serverStatus.uptimeMillis"] {
			t.Fatalf("sample %d changed on recovery: %v vs %v", i, after[i].at, before[i].at)
		}
	}
	// Each process samples at the period, never faster: a late tick may be
	// followed closely by an on-time one, but a process up for u ms holds
	// at most u/100 + 1 samples (+1 for the clock's granularity). Intervals
	// themselves depend on the machine's load, so they are not asserted.
	resets, first := 0, 0
	perProcess := func(from, to int) {
		n, up := to-from, after[to-1].values["serverStatus.uptimeMillis"]
		if int64(n) > up/100+2 {
			t.Errorf("%d samples in a process up %d ms: faster than the 100 ms period", n, up)
		}
	}
	for i := 1; i < len(after); i++ {
		if after[i].values["serverStatus.uptimeMillis"] < after[i-1].values["serverStatus.uptimeMillis"] {
			resets++
			perProcess(first, i)
			first = i
		}
	}
	perProcess(first, len(after))
	if resets != 1 {
		t.Errorf("uptime reset %d times, want once (the restart)", resets)
	}
}

// waitForSampleWhere waits until dir holds a readable sample for which
// ok holds.
func waitForSampleWhere(t *testing.T, dir string, ok func(map[string]int64) bool) {
	t.Helper()
	waitForDiagnosticData(t, dir, "a sample of the kind wanted", func(samples []ftdcSample) bool {
		return slices.ContainsFunc(samples, func(s ftdcSample) bool { return ok(s.values) })
	})
}

// waitForSamples waits until dir holds at least n readable samples.
func waitForSamples(t *testing.T, dir string, n int) {
	t.Helper()
	waitForDiagnosticData(t, dir, fmt.Sprintf("%d samples", n), func(samples []ftdcSample) bool { return len(samples) >= n })
}

// waitForDiagnosticData polls dir's samples (each time once, in time
// order; a file being written may read torn, so only what reads counts)
// until done holds, with a deadline generous enough for a busy machine.
func waitForDiagnosticData(t *testing.T, dir, what string, done func([]ftdcSample) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		docs, _ := ftdc.ReadAll(dir)
		samples, _, _ := samplesOf(docs) // a chunk being written may not decode yet
		if done(samples) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d samples and not %s after a minute", dir, len(samples), what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestReplicaSetMembersRecordReplSetGetStatus(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := mongosim.StartReplicaSet(ctx, mongosim.ReplicaSetOptions{Parameters: fastFTDC, DiagnosticDataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	p := rs.Primary()
	dir := mongosim.DiagnosticDataDir(filepath.Join(root, "member"+string(rune('0'+p))))
	waitForSamples(t, dir, 3)
	// The member's first samples may predate its election: wait for one
	// taken while it was primary (the event, with a generous deadline).
	waitForSampleWhere(t, dir, func(v map[string]int64) bool {
		return v["replSetGetStatus.myState"] == 1 && v["serverStatus.repl.isWritablePrimary"] == 1
	})
	// The same document the serverStatus command returns: every metric of
	// a live reply is a metric of the sample.
	c := &wire.Client{Addr: rs.Hosts()[p]}
	reply, err := c.Call(ctx, bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	rs.Close()
	_, samples, chunks := readFTDC(t, dir)
	// The member was primary when the test began; on a busy machine a
	// late heartbeat can start an election and it may have stepped down
	// since, so the check is that some sample records it as primary in
	// both sections, not that the last one does.
	primary := false
	for _, smp := range samples {
		primary = primary || (smp.values["replSetGetStatus.myState"] == 1 && smp.values["serverStatus.repl.isWritablePrimary"] == 1)
	}
	if !primary {
		last := samples[len(samples)-1].values
		t.Errorf("no sample of the primary records myState 1 with isWritablePrimary 1 (last: myState %d isWritablePrimary %d)",
			last["replSetGetStatus.myState"], last["serverStatus.repl.isWritablePrimary"])
	}
	var paths []string
	for _, c := range chunks {
		paths = append(paths, c.Paths()...)
	}
	missing := 0
	var walk func(prefix string, d bson.Raw)
	walk = func(prefix string, d bson.Raw) {
		elems, _ := d.Elements()
		for _, e := range elems {
			if strings.HasPrefix(e.Key(), "$") {
				continue // $clusterTime: the command envelope
			}
			k := prefix + "." + e.Key()
			switch e.Value().Type {
			case bson.TypeEmbeddedDocument:
				walk(k, e.Value().Document())
			case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeBoolean:
				if k == "serverStatus.ok" || k == "serverStatus.operationTime" {
					continue // the command envelope
				}
				if !slices.Contains(paths, k) {
					missing++
					t.Errorf("the serverStatus reply's %s is not in the diagnostic data", k)
				}
			}
		}
	}
	walk("serverStatus", bson.Raw(reply))
	if missing > 0 {
		t.Logf("%d paths recorded", len(paths))
	}
}
