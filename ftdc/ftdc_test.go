package ftdc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/internal/stormtest"
)

func TestRoundTripServerStatus(t *testing.T) {
	const n = 700
	dir := writeSamples(t, WriterOptions{}, n, serverStatusSample)
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if docs[0].Type != TypeMetadata {
		t.Fatalf("first document has type %d, want metadata", docs[0].Type)
	}
	var md bson.D
	if err := bson.Unmarshal(docs[0].Doc, &md); err != nil || md[1].Key != "buildInfo" {
		t.Fatalf("metadata doc = %v, %v", md, err)
	}
	cs := chunksOf(t, docs)
	if got := sampleCounts(cs); got != "300,300,100" {
		t.Fatalf("chunk sample counts %s, want 300,300,100", got)
	}
	i := 0
	for _, c := range cs {
		ref := serverStatusSample(i)
		if want := t0.Add(time.Duration(i) * time.Second); !c.ID.Equal(want) {
			t.Errorf("chunk _id %v, want reference start %v", c.ID, want)
		}
		want := expect(ref)
		if len(c.Metrics) != len(want) {
			t.Fatalf("chunk has %d metrics, want %d", len(c.Metrics), len(want))
		}
		for k, pv := range want {
			if c.Metrics[k].Path != pv.path {
				t.Fatalf("metric %d path %q, want %q", k, c.Metrics[k].Path, pv.path)
			}
		}
		for s, sample := range c.Samples() {
			exp := expect(serverStatusSample(i))
			for k, pv := range exp {
				if got := sample.At(k); got != pv.v {
					t.Fatalf("sample %d %s = %d, want %d", i, pv.path, got, pv.v)
				}
			}
			if sample.Time() != t0.Add(time.Duration(i)*time.Second).UnixMilli() || sample.Index() != s {
				t.Fatalf("sample %d time %d", i, sample.Time())
			}
			i++
		}
	}
	if i != n {
		t.Fatalf("read %d samples, want %d", i, n)
	}
	c := cs[0]
	if v, ok := c.Value("serverStatus.mem.resident", 5); !ok || v != 512+5 {
		t.Errorf("Value(mem.resident, 5) = %d, %v", v, ok)
	}
	if v, ok := c.Value("serverStatus.repl.lastWrite.opTime.ts.i", 6); !ok || v != 3 {
		t.Errorf("timestamp increment = %d, %v", v, ok)
	}
	if v, _ := c.Value("serverStatus.metrics.sorts.spilled", 2); v != 2 { // 2.5 -> 2
		t.Errorf("decimal 2.5 -> %d, want 2", v)
	}
	if v, _ := c.Value("serverStatus.metrics.sorts.spilled", 3); v != 4 { // 3.5 -> 4
		t.Errorf("decimal 3.5 -> %d, want 4", v)
	}
	if v, _ := c.Value("systemMetrics.disks.1.io_time_ms", 0); v != 2 {
		t.Errorf("array element path: %d", v)
	}
	for _, p := range []string{"serverStatus.host", "serverStatus.repl.electionId", "serverStatus.blob", "serverStatus.nothing", "systemMetrics.disks.0.name"} {
		if _, ok := c.Lookup(p); ok {
			t.Errorf("%s should not be a metric", p)
		}
	}
	if k, _ := c.Lookup("serverStatus.localTime"); c.Metrics[k].Kind != KindDateTime {
		t.Errorf("localTime kind %v", c.Metrics[k].Kind)
	}
}

// handChunk lays out a chunk payload byte by byte, independently of the
// encoder: length, zlib stream of reference, counts and delta bytes.
func handChunk(t testing.TB, ref []byte, nm, nd uint32, deltas []byte) []byte {
	t.Helper()
	var raw []byte
	raw = append(raw, ref...)
	raw = binary.LittleEndian.AppendUint32(raw, nm)
	raw = binary.LittleEndian.AppendUint32(raw, nd)
	raw = append(raw, deltas...)
	return handCompress(t, raw, uint32(len(raw)))
}

func handCompress(t testing.TB, raw []byte, declared uint32) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	return append(binary.LittleEndian.AppendUint32(nil, declared), z.Bytes()...)
}

// The hand-built wire layout: 5 metrics (start, a, b.c, b.ts.t, b.ts.i),
// 4 deltas. The first zero run covers a's four deltas and b.c's first two
// (crossing a metric boundary); another crosses from b.c into b.ts.t; the
// last runs off the end and is cut.
var (
	handRef = bson.D{
		{Key: "start", Value: bson.DateTime(1000)},
		{Key: "a", Value: int32(5)},
		{Key: "s", Value: "not a metric"},
		{Key: "b", Value: bson.D{{Key: "c", Value: int64(7)}, {Key: "ts", Value: bson.Timestamp{T: 9, I: 2}}}},
	}
	handDeltas = []byte{
		0xE8, 0x07, 0xE8, 0x07, 0xE8, 0x07, 0xE8, 0x07, // start: +1000 four times
		0x00, 0x05, // a: 0,0,0,0 and b.c: 0,0 (one zero and five more)
		0x05,       // b.c: +5
		0x00, 0x02, // b.c: 0 and b.ts.t: 0, 0 (a run across another boundary)
		0x80, 0x01, // b.ts.t: +128
		0x00, 0x00, // b.ts.t: 0 (a run of one)
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, // b.ts.i: -1 (2^64-1)
		0x00, 0x02, // b.ts.i: 0, 0, 0
	}
	handWant = map[string][]int64{
		"start":  {1000, 2000, 3000, 4000, 5000},
		"a":      {5, 5, 5, 5, 5},
		"b.c":    {7, 7, 7, 12, 12},
		"b.ts.t": {9, 9, 9, 137, 137},
		"b.ts.i": {2, 1, 1, 1, 1},
	}
)

func handSamples() []bson.D {
	var out []bson.D
	for s := 0; s < 5; s++ {
		out = append(out, bson.D{
			{Key: "start", Value: bson.DateTime(handWant["start"][s])},
			{Key: "a", Value: int32(handWant["a"][s])},
			{Key: "s", Value: "not a metric"},
			{Key: "b", Value: bson.D{
				{Key: "c", Value: handWant["b.c"][s]},
				{Key: "ts", Value: bson.Timestamp{T: uint32(handWant["b.ts.t"][s]), I: uint32(handWant["b.ts.i"][s])}},
			}},
		})
	}
	return out
}

func checkHand(t *testing.T, c *Chunk) {
	t.Helper()
	if c.NumSamples != 5 || len(c.Metrics) != 5 {
		t.Fatalf("chunk has %d samples × %d metrics", c.NumSamples, len(c.Metrics))
	}
	for path, want := range handWant {
		k, ok := c.Lookup(path)
		if !ok {
			t.Fatalf("no metric %s in %v", path, c.Paths())
		}
		for s, w := range want {
			if got := c.Column(k)[s]; got != w {
				t.Errorf("%s[%d] = %d, want %d", path, s, got, w)
			}
		}
	}
	for s := 0; s < 5; s++ {
		if c.Time(s) != handWant["start"][s] {
			t.Errorf("Time(%d) = %d", s, c.Time(s))
		}
	}
}

func TestHandBuiltChunkWireLayout(t *testing.T) {
	ref := mustMarshal(t, handRef)
	c, err := DecodeChunk(handChunk(t, ref, 5, 4, handDeltas))
	if err != nil {
		t.Fatal(err)
	}
	checkHand(t, c)
	if !bytes.Equal(c.Reference, ref) {
		t.Error("reference document not kept verbatim")
	}

	// A final run that claims 99 more zeros than remain is cut.
	over := append(bytes.Clone(handDeltas[:len(handDeltas)-1]), 99)
	c, err = DecodeChunk(handChunk(t, ref, 5, 4, over))
	if err != nil {
		t.Fatal(err)
	}
	checkHand(t, c)

	// So is a run that starts inside one metric and overshoots everything.
	allZero := []byte{0x00, 0xFF, 0xFF, 0x03}
	c, err = DecodeChunk(handChunk(t, ref, 5, 4, allZero))
	if err != nil {
		t.Fatal(err)
	}
	for k := range c.Metrics {
		col := c.Column(k)
		for s := range col {
			if col[s] != col[0] {
				t.Fatalf("metric %s changes under an all-zero run", c.Metrics[k].Path)
			}
		}
	}

	// The encoder lays out exactly the same bytes for the same samples.
	b := newChunkBuilder(5)
	var done *finished
	for _, s := range handSamples() {
		if done, err = b.add(mustMarshal(t, s), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if done == nil {
		t.Fatal("a full chunk of 5 samples was not closed")
	}
	b2 := newChunkBuilder(6)
	for _, s := range handSamples() {
		b2.add(mustMarshal(t, s), time.Time{})
	}
	var want []byte
	want = append(want, ref...)
	want = binary.LittleEndian.AppendUint32(want, 5)
	want = binary.LittleEndian.AppendUint32(want, 4)
	want = append(want, handDeltas...)
	if got := b2.uncompressed(); !bytes.Equal(got, want) {
		t.Fatalf("encoder layout\n got %x\nwant %x", got, want)
	}
	if binary.LittleEndian.Uint32(done.payload) != uint32(len(want)) {
		t.Errorf("payload length prefix %d, want %d", binary.LittleEndian.Uint32(done.payload), len(want))
	}
	c, err = DecodeChunk(done.payload)
	if err != nil {
		t.Fatal(err)
	}
	checkHand(t, c)
}

func TestMetricCountMismatchRejected(t *testing.T) {
	ref := mustMarshal(t, handRef)
	for _, nm := range []uint32{4, 6, 0} {
		_, err := DecodeChunk(handChunk(t, ref, nm, 4, handDeltas))
		if !errors.Is(err, ErrMetricCount) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("metricsCount %d: err = %v, want ErrMetricCount", nm, err)
		}
	}
	// Swapping the two counts (a misreading of the header order) is caught too.
	if _, err := DecodeChunk(handChunk(t, ref, 4, 5, handDeltas)); !errors.Is(err, ErrMetricCount) {
		t.Errorf("swapped counts: %v", err)
	}
}

func TestSchemaChangeStartsNewReference(t *testing.T) {
	gen := func(i int) bson.D {
		at := ms(t0.Add(time.Duration(i) * time.Second))
		d := bson.D{{Key: "start", Value: at}, {Key: "x", Value: bson.D{{Key: "a", Value: int64(i)}}}}
		switch {
		case i < 5: // shape A
		case i < 8: // a field added: new chunk, one more metric
			d[1].Value = bson.D{{Key: "a", Value: int64(i)}, {Key: "b", Value: int32(i)}}
		case i < 10: // numeric type changes do not split: int64 -> double
			d[1].Value = bson.D{{Key: "a", Value: float64(i)}, {Key: "b", Value: int32(i)}}
		case i < 12: // neither does a string appearing or changing
			d[1].Value = bson.D{{Key: "a", Value: float64(i)}, {Key: "note", Value: strings.Repeat("z", i)}, {Key: "b", Value: int32(i)}}
		case i < 14: // a non-numeric type change does: int32 -> bool
			d[1].Value = bson.D{{Key: "a", Value: float64(i)}, {Key: "b", Value: true}}
		default: // a rename does
			d[1].Value = bson.D{{Key: "a", Value: float64(i)}, {Key: "c", Value: true}}
		}
		return append(d, bson.E{Key: "end", Value: at})
	}
	dir := writeSamples(t, WriterOptions{}, 16, gen)
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := chunksOf(t, docs)
	if got := sampleCounts(cs); got != "5,7,2,2" {
		t.Fatalf("chunk sample counts %s, want 5,7,2,2", got)
	}
	wantMetrics := []int{3, 4, 4, 4}
	for k, c := range cs {
		if len(c.Metrics) != wantMetrics[k] {
			t.Errorf("chunk %d has %d metrics, want %d", k, len(c.Metrics), wantMetrics[k])
		}
	}
	if v, _ := cs[1].Value("x.a", 4); v != 9 {
		t.Errorf("double after int64 in one chunk: %d", v)
	}
	if k, _ := cs[1].Lookup("x.a"); cs[1].Metrics[k].Kind != KindInt64 {
		t.Errorf("kind follows the reference: %v", cs[1].Metrics[k].Kind)
	}
	if _, ok := cs[3].Lookup("x.c"); !ok {
		t.Errorf("renamed field missing: %v", cs[3].Paths())
	}
	if !cs[1].ID.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("new reference's _id %v", cs[1].ID)
	}
}

func TestMetadataDeltaDocuments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w, err := NewWriter(dir, WriterOptions{Now: fixedClock(t0), Metadata: metadataDoc()})
	if err != nil {
		t.Fatal(err)
	}
	pm := func(i int, param int32, extra bool) bson.D {
		at := ms(t0.Add(time.Duration(i) * time.Second))
		params := bson.D{{Key: "start", Value: at}, {Key: "internalQueryMaxMemory", Value: param}, {Key: "name", Value: "sim"}, {Key: "end", Value: at}}
		if extra {
			params = append(params[:3], bson.E{Key: "more", Value: true}, params[3])
		}
		return bson.D{{Key: "start", Value: at},
			{Key: "getParameter", Value: params},
			{Key: "featureCompatibilityVersion", Value: bson.D{{Key: "start", Value: at}, {Key: "version", Value: "8.0"}, {Key: "end", Value: at}}},
			{Key: "end", Value: at}}
	}
	steps := []struct {
		param int32
		extra bool
	}{{100, false}, {100, false}, {250, false}, {250, false}, {250, true}}
	for i, s := range steps {
		if err := w.AddPeriodicMetadata(pm(i, s.param, s.extra)); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(bson.D{{Key: "start", Value: ms(t0.Add(time.Duration(i) * time.Second))}, {Key: "v", Value: int32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	var deltas []*Document
	for _, d := range docs {
		if d.Type == TypeMetadataDelta {
			deltas = append(deltas, d)
		}
	}
	if len(deltas) != 3 {
		t.Fatalf("%d metadata-delta documents, want 3 (full, change, full after shape change)", len(deltas))
	}
	if deltas[0].Index != 0 || deltas[1].Index != 1 || deltas[2].Index != 0 {
		t.Errorf("indexes %d %d %d, want 0 1 0", deltas[0].Index, deltas[1].Index, deltas[2].Index)
	}
	var full, change bson.D
	bson.Unmarshal(deltas[0].Doc, &full)
	bson.Unmarshal(deltas[1].Doc, &change)
	if len(full) != 4 {
		t.Errorf("full document %v", full)
	}
	// The change holds start, the changed collector (start, the changed
	// field, end) and end; the unchanged collector is left out.
	if len(change) != 3 || change[1].Key != "getParameter" {
		t.Fatalf("delta document %v", change)
	}
	gp := change[1].Value.(bson.D)
	if len(gp) != 3 || gp[1].Key != "internalQueryMaxMemory" || gp[1].Value != int32(250) {
		t.Errorf("delta collector %v", gp)
	}
	if !deltas[1].ID.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("delta _id %v", deltas[1].ID)
	}
}

func TestInterimFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "diagnostic.data")
	w, err := NewWriter(dir, WriterOptions{InterimSamples: 5, Now: fixedClock(t0), Metadata: metadataDoc()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		if err := w.Add(serverStatusSample(i)); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || filepath.Base(files[1]) != InterimFile || !strings.HasPrefix(filepath.Base(files[0]), "metrics.2025-03-08T22-58-41Z-00000") {
		t.Fatalf("files %v", files)
	}
	for _, n := range stormtest.DirEntries(t, dir) {
		if strings.HasSuffix(n, ".temp") {
			t.Errorf("temporary file %s left behind", n)
		}
	}
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := chunksOf(t, docs)
	// Rewritten at 5 and 10 deltas: the interim chunk holds 11 samples.
	if len(cs) != 1 || cs[0].NumSamples != 11 || filepath.Base(docs[len(docs)-1].File) != InterimFile {
		t.Fatalf("interim: %d chunks, counts %s", len(cs), sampleCounts(cs))
	}
	if v, _ := cs[0].Value("serverStatus.opcounters.insert", 10); v != 30 {
		t.Errorf("interim value %d", v)
	}

	// A restart (the old writer abandoned, as after a crash) carries the
	// interim chunk into the new archive file, after its metadata.
	w2, err := NewWriter(dir, WriterOptions{Now: fixedClock(t0.Add(time.Hour)), Metadata: metadataDoc()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, InterimFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("interim file not consumed: %v", err)
	}
	f, err := os.Open(w2.File())
	if err != nil {
		t.Fatal(err)
	}
	r := NewNamedReader(f, w2.File())
	d1, _ := r.Next()
	d2, err := r.Next()
	f.Close()
	if err != nil || d1.Type != TypeMetadata || d2.Type != TypeMetricChunk {
		t.Fatalf("new archive starts %v %v: %v", d1, d2, err)
	}
	if c, _ := d2.Chunk(); c.NumSamples != 11 {
		t.Errorf("recovered %d samples", c.NumSamples)
	}
	w2.Close()

	// Close flushes the pending chunk to the archive and removes the interim.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, InterimFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("interim file survives Close: %v", err)
	}
}

// offsets returns the byte offset of every document in an FTDC file.
func offsets(t *testing.T, b []byte) []int64 {
	var out []int64
	for off := 0; off < len(b); {
		out = append(out, int64(off))
		off += int(binary.LittleEndian.Uint32(b[off:]))
	}
	return out
}

func TestTornFinalChunk(t *testing.T) {
	dir := writeSamples(t, WriterOptions{}, 700, serverStatusSample)
	files, _ := Files(dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	offs := offsets(t, b)
	if len(offs) != 4 { // metadata + 3 chunks
		t.Fatalf("%d documents", len(offs))
	}
	last := offs[3]
	for _, cut := range []int64{last + 2, last + 40, int64(len(b)) - 1} {
		torn := filepath.Join(t.TempDir(), "metrics.torn")
		os.WriteFile(torn, b[:cut], 0o644)

		docs, err := ReadAll(torn)
		var fe *Error
		if !errors.Is(err, ErrTruncated) || !errors.As(err, &fe) {
			t.Fatalf("cut at %d: err = %v, want a torn *Error", cut, err)
		}
		if fe.File != torn || fe.Offset != last {
			t.Errorf("error names %s@%d, want %s@%d", fe.File, fe.Offset, torn, last)
		}
		if !strings.Contains(err.Error(), torn) || !strings.Contains(err.Error(), "offset "+strconv.FormatInt(last, 10)) {
			t.Errorf("message %q lacks file or offset", err)
		}
		if got := sampleCounts(chunksOf(t, docs)); got != "300,300" {
			t.Errorf("cut at %d: partial data %s, want 300,300", cut, got)
		}

		var out bytes.Buffer
		err = Dump(&out, []string{"serverStatus.uptime"}, "jsonl", torn)
		if !IsTruncated(err) || strings.Count(out.String(), "\n") != 600 {
			t.Errorf("dump of torn file: %d lines, err %v", strings.Count(out.String(), "\n"), err)
		}
	}

	// In a directory, reading goes on past a torn file to the next one.
	two := filepath.Join(t.TempDir(), "diagnostic.data")
	os.Mkdir(two, 0o755)
	os.WriteFile(filepath.Join(two, "metrics.2025-01-01T00-00-00Z-00000"), b[:last+100], 0o644)
	os.WriteFile(filepath.Join(two, "metrics.2025-01-02T00-00-00Z-00000"), b, 0o644)
	docs, err := ReadAll(two)
	var fe *Error
	if !errors.As(err, &fe) || !IsTruncated(err) || filepath.Base(fe.File) != "metrics.2025-01-01T00-00-00Z-00000" {
		t.Errorf("directory read: %v", err)
	}
	if got := sampleCounts(chunksOf(t, docs)); got != "300,300,300,300,100" {
		t.Errorf("directory read got %s", got)
	}
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestHostileInputsRejectedWithoutAllocation(t *testing.T) {
	ref := mustMarshal(t, handRef)
	huge := func(nm, nd uint32) []byte { return handChunk(t, ref, nm, nd, nil) }
	cases := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"declared 4 GiB", append([]byte{0xFF, 0xFF, 0xFF, 0xFF}, handChunk(t, ref, 5, 4, handDeltas)[4:]...), ErrTooLarge},
		{"declared beyond deflate ratio", append(binary.LittleEndian.AppendUint32(nil, 10<<20), 0x78, 0x9c, 0x03, 0x00), ErrCorrupt},
		{"2^32-1 metrics", huge(math.MaxUint32, 1), ErrTooLarge},
		{"2^32-1 deltas", huge(5, math.MaxUint32), ErrTooLarge},
		{"metrics×samples", huge(100, 100000), ErrTooLarge},
		{"no metrics, many deltas", handChunk(t, mustMarshal(t, bson.D{}), 0, MaxDeltas+1, nil), ErrTooLarge},
		{"overlong varint", handChunk(t, ref, 5, 4, bytes.Repeat([]byte{0xFF}, 11)), ErrCorrupt},
		{"truncated deltas", handChunk(t, ref, 5, 4, handDeltas[:9]), ErrCorrupt},
		{"zero without count", handChunk(t, ref, 5, 4, []byte{0xE8, 0x07, 0x00}), ErrCorrupt},
		{"not zlib", []byte{10, 0, 0, 0, 1, 2, 3, 4, 5, 6}, ErrCorrupt},
		{"inflates past declared", handCompress(t, append(bytes.Clone(ref), make([]byte, 100)...), uint32(len(ref))), ErrCorrupt},
		{"short payload", []byte{1, 2}, ErrCorrupt},
		{"bad reference", handCompress(t, []byte{0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 13), ErrCorrupt},
	}
	for _, c := range cases {
		var err error
		n := allocated(func() { _, err = DecodeChunk(c.payload) })
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if n > 2<<20 {
			t.Errorf("%s: allocated %d bytes", c.name, n)
		}
	}

	// Nesting deeper than ten levels: refused by the decoder and the writer.
	deep := bson.D{{Key: "v", Value: int32(1)}}
	for i := 0; i < MaxDepth+1; i++ {
		deep = bson.D{{Key: "d", Value: deep}}
	}
	deepRaw := mustMarshal(t, deep)
	if _, err := DecodeChunk(handChunk(t, deepRaw, 1, 0, nil)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("deep reference: %v", err)
	}
	if _, err := EncodeChunk(deepRaw); err == nil {
		t.Error("deep sample accepted")
	}
	ok := deep[0].Value.(bson.D) // ten levels: allowed
	if _, err := EncodeChunk(ok); err != nil {
		t.Errorf("ten levels refused: %v", err)
	}

	// File framing: a declared document length far beyond what the stream
	// holds, or beyond the bound, allocates almost nothing.
	for _, size := range []uint32{0x7FFFFFFF, MaxDocumentSize} {
		stream := append(binary.LittleEndian.AppendUint32(nil, size), make([]byte, 100)...)
		var err error
		n := allocated(func() {
			_, err = NewNamedReader(bytes.NewReader(stream), "hostile").Next()
		})
		if err == nil || n > 1<<20 {
			t.Errorf("declared %d: err %v after %d bytes allocated", size, err, n)
		}
		var fe *Error
		if !errors.As(err, &fe) || fe.File != "hostile" || fe.Offset != 0 {
			t.Errorf("declared %d: %v", size, err)
		}
	}
	if _, err := NewReader(bytes.NewReader(binary.LittleEndian.AppendUint32(nil, 3))).Next(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("length 3: %v", err)
	}
}

func TestReaderStream(t *testing.T) {
	payload, err := EncodeChunk(handSamples()[0], handSamples()[1])
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	stream = append(stream, MetadataDocument(t0, mustMarshal(t, metadataDoc()))...)
	noType := mustMarshal(t, bson.D{{Key: "_id", Value: ms(t0)}})
	stream = append(stream, noType...)
	stream = append(stream, mustMarshal(t, bson.D{{Key: "_id", Value: ms(t0)}, {Key: "type", Value: int64(7)}})...)
	chunkAt := int64(len(stream))
	stream = append(stream, ChunkDocument(t0.Add(time.Minute), payload)...)
	// Zero length: the end marker of an emptied file; the rest is ignored.
	stream = append(stream, 0, 0, 0, 0, 0xFF, 0xFF)

	r := NewNamedReader(bytes.NewReader(stream), "s")
	d, err := r.Next()
	if err != nil || d.Type != TypeMetadata || d.Offset != 0 || !d.ID.Equal(t0) {
		t.Fatalf("metadata: %+v %v", d, err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("document without type: %v", err)
	}
	d, err = r.Next() // the reader goes on after a bad document
	if err != nil || d.Type != 7 {
		t.Fatalf("unknown type passes through: %+v %v", d, err)
	}
	d, err = r.Next()
	if err != nil || d.Type != TypeMetricChunk || d.Offset != chunkAt {
		t.Fatalf("chunk: %+v %v", d, err)
	}
	c, err := d.Chunk()
	if err != nil || c.NumSamples != 2 || !c.ID.Equal(t0.Add(time.Minute)) {
		t.Fatalf("chunk: %v %v", c, err)
	}
	s, err := d.Schema()
	if err != nil || s != c {
		t.Errorf("Schema after Chunk: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after zero length: %v", err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("EOF is sticky: %v", err)
	}

	// A chunk that fails to decode names its offset.
	bad := append(bytes.Clone(stream[:chunkAt]), ChunkDocument(t0, []byte{1, 2, 3, 4, 5})...)
	r = NewNamedReader(bytes.NewReader(bad), "bad")
	for {
		d, err := r.Next()
		if err == io.EOF {
			t.Fatal("no chunk")
		}
		if err != nil || d.Type != TypeMetricChunk {
			continue
		}
		_, err = d.Chunk()
		var fe *Error
		if !errors.As(err, &fe) || fe.Offset != chunkAt || fe.File != "bad" {
			t.Fatalf("chunk error %v", err)
		}
		break
	}
}

func TestSchemaOnlyDecode(t *testing.T) {
	payload, err := EncodeChunk(serverStatusSample(0), serverStatusSample(1), serverStatusSample(2))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeChunkSchema(payload)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := DecodeChunk(payload)
	if s.NumSamples != 3 || len(s.Metrics) != len(full.Metrics) || s.Metrics[7] != full.Metrics[7] {
		t.Errorf("schema %d samples, %d metrics", s.NumSamples, len(s.Metrics))
	}
	if _, err := EncodeChunk(serverStatusSample(0), bson.D{{Key: "x", Value: int32(1)}}); err == nil {
		t.Error("EncodeChunk accepted two schemas")
	}
}

func TestDumpAndListPaths(t *testing.T) {
	gen := func(i int) bson.D {
		d := bson.D{{Key: "start", Value: bson.DateTime(1000 * int64(i+1))}, {Key: "a", Value: int32(i)}}
		if i < 3 {
			d = append(d, bson.E{Key: "b", Value: int64(10 + i)})
		} else {
			d = append(d, bson.E{Key: "c \"q\"", Value: true})
		}
		return d
	}
	dir := writeSamples(t, WriterOptions{}, 5, gen)

	paths, err := ListPaths(dir)
	if err != nil || strings.Join(paths, "|") != `start|a|b|c "q"` {
		t.Fatalf("ListPaths = %q, %v", paths, err)
	}

	var out bytes.Buffer
	if err := Dump(&out, nil, "jsonl", dir); err != nil {
		t.Fatal(err)
	}
	want := `{"start":1000,"a":0,"b":10}
{"start":2000,"a":1,"b":11}
{"start":3000,"a":2,"b":12}
{"start":4000,"a":3,"c \"q\"":1}
{"start":5000,"a":4,"c \"q\"":1}
`
	if out.String() != want {
		t.Errorf("jsonl:\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	if err := Dump(&out, nil, "csv", dir); err != nil {
		t.Fatal(err)
	}
	want = `start,a,b,"c ""q"""
1000,0,10,
2000,1,11,
3000,2,12,
4000,3,,1
5000,4,,1
`
	if out.String() != want {
		t.Errorf("csv:\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	if err := Dump(&out, []string{"b", "start", "a", "missing"}, "jsonl", dir); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(out.String(), "\n"); lines[0] != `{"start":1000,"b":10,"a":0}` || lines[4] != `{"start":5000,"a":4}` {
		t.Errorf("chosen paths: %q", lines)
	}
	out.Reset()
	if err := Dump(&out, []string{"b", "a"}, "csv", dir); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "start,b,a\n1000,10,0\n") || !strings.HasSuffix(out.String(), "5000,,4\n") {
		t.Errorf("chosen csv: %q", out.String())
	}
	if err := Dump(&out, nil, "xml", dir); err == nil {
		t.Error("unknown format accepted")
	}
	if err := Dump(&out, nil, "csv", filepath.Join(dir, "nope")); err == nil {
		t.Error("missing source accepted")
	}
}

func TestRotationAndDirectoryOrder(t *testing.T) {
	clock := fixedClock(t0)
	dir := writeSamples(t, WriterOptions{SamplesPerChunk: 10, MaxFileSize: 3000, Now: clock}, 200, serverStatusSample)
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("only %d files after rotation by size", len(files))
	}
	next := 0
	for _, f := range files {
		fi, _ := os.Stat(f)
		r, _ := Open(f)
		d, err := r.Next()
		if err != nil || d.Type != TypeMetadata {
			t.Fatalf("%s does not start with metadata: %v", f, err)
		}
		for {
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.Chunk()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.Samples() {
				if want := t0.Add(time.Duration(next) * time.Second).UnixMilli(); s.Time() != want {
					t.Fatalf("%s: sample time %d, want %d", f, s.Time(), want)
				}
				next++
			}
		}
		r.Close()
		if fi.Size() > 3000+40000 {
			t.Errorf("%s is %d bytes", f, fi.Size())
		}
	}
	if next != 200 {
		t.Fatalf("read %d samples, want 200", next)
	}

	// Files opened within one second get increasing counters.
	still := func() time.Time { return t0 }
	dir2 := writeSamples(t, WriterOptions{SamplesPerChunk: 10, MaxFileSize: 3000, Now: still}, 40, serverStatusSample)
	names := stormtest.DirEntries(t, dir2)
	if len(names) < 2 || names[0] != "metrics.2025-03-08T22-58-41Z-00000" || names[1] != "metrics.2025-03-08T22-58-41Z-00001" {
		t.Errorf("names %v", names)
	}

	// The directory cap removes the oldest files.
	dir3 := writeSamples(t, WriterOptions{SamplesPerChunk: 10, MaxFileSize: 3000, MaxDirectorySize: 12000, Now: fixedClock(t0)}, 200, serverStatusSample)
	var total int64
	kept := stormtest.DirEntries(t, dir3)
	for _, n := range kept {
		fi, _ := os.Stat(filepath.Join(dir3, n))
		total += fi.Size()
	}
	if len(kept) >= len(files) || total > 12000+20000 {
		t.Errorf("directory cap kept %d files, %d bytes", len(kept), total)
	}
	all, _ := ReadAll(dir3)
	cs := chunksOf(t, all)
	if last := cs[len(cs)-1]; last.Time(last.NumSamples-1) != t0.Add(199*time.Second).UnixMilli() {
		t.Error("newest samples were trimmed")
	}
}

// A chunk that would outgrow the decoder's bounds is closed early, so every
// chunk the Writer writes can be read back.
func TestWriterStaysWithinDecoderBounds(t *testing.T) {
	const nm = 30000
	d := make(bson.D, nm)
	for i := range d {
		d[i] = bson.E{Key: strconv.Itoa(i), Value: int32(i)}
	}
	raw := bson.Raw(mustMarshal(t, d))
	dir := filepath.Join(t.TempDir(), "big")
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if err := w.Add(raw); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := MaxChunkValues / nm // samples that fit
	if got := sampleCounts(chunksOf(t, docs)); got != strconv.Itoa(want)+","+strconv.Itoa(300-want) {
		t.Errorf("chunks %s, want %d,%d", got, want, 300-want)
	}
}

func TestConversions(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want int64
	}{{2.9, 2}, {-2.9, -2}, {math.NaN(), 0}, {1e300, math.MaxInt64}, {-1e300, math.MinInt64}, {math.Inf(1), math.MaxInt64}, {9.2233720368547758e18, math.MaxInt64}, {-9.2233720368547758e18, math.MinInt64}} {
		if got := doubleToInt64(c.in); got != c.want {
			t.Errorf("double %v -> %d, want %d", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want int64
	}{{"2.5", 2}, {"3.5", 4}, {"-2.5", -2}, {"-3.5", -4}, {"2.51", 3}, {"1E+3", 1000}, {"12345678901234567890123", math.MaxInt64}, {"-1E+40", math.MinInt64}, {"NaN", 0}, {"Infinity", math.MaxInt64}, {"1E-50", 0}, {"0.49999", 0}, {"9223372036854775807", math.MaxInt64}, {"-9223372036854775808", math.MinInt64}} {
		d, err := bson.ParseDecimal128(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := decimalToInt64(d); got != c.want {
			t.Errorf("decimal %s -> %d, want %d", c.in, got, c.want)
		}
	}
}

func TestWriterConcurrentUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w, err := NewWriter(dir, WriterOptions{SamplesPerChunk: 20, InterimSamples: 3, MaxFileSize: 20000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := w.Add(serverStatusSample(i)); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					w.Flush()
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(serverStatusSample(0)); err == nil {
		t.Error("Add after Close succeeded")
	}
	docs, err := ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range chunksOf(t, docs) {
		n += c.NumSamples
	}
	if n != 200 {
		t.Errorf("%d samples, want 200", n)
	}
}
