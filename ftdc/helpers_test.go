package ftdc

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

var t0 = time.Date(2025, 3, 8, 22, 58, 41, 0, time.UTC)

func ms(t time.Time) bson.DateTime { return bson.DateTime(t.UnixMilli()) }

// serverStatusSample builds a serverStatus-shaped FTDC sample i: nested
// documents, arrays, Timestamps, Dates, bools, doubles, int32/int64,
// decimal128 and fields that carry no metric.
func serverStatusSample(i int) bson.D {
	at := t0.Add(time.Duration(i) * time.Second)
	dec, _ := bson.ParseDecimal128(strconv.Itoa(i) + ".5") // ties to even
	return bson.D{
		{Key: "start", Value: ms(at)},
		{Key: "serverStatus", Value: bson.D{
			{Key: "start", Value: ms(at)},
			{Key: "host", Value: "sim-1:27017"},
			{Key: "version", Value: "8.0.4"},
			{Key: "pid", Value: int64(4242)},
			{Key: "uptime", Value: float64(1000+i) + 0.75},
			{Key: "uptimeMillis", Value: int64(1000000 + 1000*i)},
			{Key: "localTime", Value: ms(at.Add(3 * time.Millisecond))},
			{Key: "asserts", Value: bson.D{
				{Key: "regular", Value: int32(0)},
				{Key: "warning", Value: int32(i / 50)},
				{Key: "rollovers", Value: int32(0)},
			}},
			{Key: "connections", Value: bson.D{
				{Key: "current", Value: int32(10 + i%7)},
				{Key: "available", Value: int32(838860 - i%7)},
				{Key: "totalCreated", Value: int64(100 + i)},
			}},
			{Key: "mem", Value: bson.D{
				{Key: "bits", Value: int32(64)},
				{Key: "resident", Value: int32(512 + i%13)},
				{Key: "virtual", Value: int32(2048 - i%5)},
				{Key: "supported", Value: true},
			}},
			{Key: "opcounters", Value: bson.D{
				{Key: "insert", Value: int64(3 * i)},
				{Key: "query", Value: int64(i * i)},
				{Key: "update", Value: int64(0)},
				{Key: "delete", Value: int64(i / 10)},
				{Key: "command", Value: int64(7*i + 1)},
			}},
			{Key: "repl", Value: bson.D{
				{Key: "setName", Value: "rs0"},
				{Key: "isWritablePrimary", Value: i%100 != 99},
				{Key: "electionId", Value: bson.ObjectID{1, 2, 3}},
				{Key: "lastWrite", Value: bson.D{
					{Key: "opTime", Value: bson.D{
						{Key: "ts", Value: bson.Timestamp{T: uint32(at.Unix()), I: uint32(1 + i%4)}},
						{Key: "t", Value: int64(3)},
					}},
					{Key: "lastWriteDate", Value: ms(at)},
				}},
			}},
			{Key: "wiredTiger", Value: bson.D{
				{Key: "cache", Value: bson.D{
					{Key: "bytes currently in the cache", Value: int64(1<<30 - 977*i)},
					{Key: "maximum bytes configured", Value: float64(4 << 30)},
					{Key: "pages evicted", Value: float64(i) * 1.5},
				}},
			}},
			{Key: "metrics", Value: bson.D{
				{Key: "queryExecutor", Value: bson.D{{Key: "scanned", Value: int64(i * 1000)}}},
				{Key: "sorts", Value: bson.D{
					{Key: "spilled", Value: dec},
					{Key: "negative", Value: int64(-i)},
				}},
			}},
			{Key: "blob", Value: bson.Binary{Subtype: 0, Data: []byte{1, 2, 3}}},
			{Key: "nothing", Value: nil},
			{Key: "end", Value: ms(at.Add(8 * time.Millisecond))},
		}},
		{Key: "systemMetrics", Value: bson.D{
			{Key: "start", Value: ms(at)},
			{Key: "cpu", Value: bson.D{
				{Key: "user_ms", Value: int64(10 * i)},
				{Key: "system_ms", Value: int64(3 * i)},
				{Key: "num_cpus", Value: int32(8)},
			}},
			{Key: "disks", Value: bson.A{
				bson.D{{Key: "name", Value: "sda"}, {Key: "reads", Value: int64(5 * i)}, {Key: "io_time_ms", Value: int64(i)}},
				bson.D{{Key: "name", Value: "sdb"}, {Key: "reads", Value: int64(0)}, {Key: "io_time_ms", Value: int64(2)}},
			}},
			{Key: "loadavg", Value: bson.A{float64(i%3) + 0.5, 1.25, -0.0}},
			{Key: "end", Value: ms(at.Add(9 * time.Millisecond))},
		}},
		{Key: "end", Value: ms(at.Add(10 * time.Millisecond))},
	}
}

// expect flattens a bson.D the way the format prescribes, written over Go
// values independently of the package's raw-byte walker.
type pathValue struct {
	path string
	v    int64
}

func expect(d bson.D) []pathValue {
	var out []pathValue
	var walk func(prefix string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case bson.D:
			for _, e := range v {
				walk(join(path, e.Key), e.Value)
			}
		case bson.A:
			for i, e := range v {
				walk(join(path, strconv.Itoa(i)), e)
			}
		case float64:
			switch {
			case math.IsNaN(v):
				out = append(out, pathValue{path, 0})
			case v >= math.MaxInt64:
				out = append(out, pathValue{path, math.MaxInt64})
			case v <= math.MinInt64:
				out = append(out, pathValue{path, math.MinInt64})
			default:
				out = append(out, pathValue{path, int64(math.Trunc(v))})
			}
		case int32:
			out = append(out, pathValue{path, int64(v)})
		case int64:
			out = append(out, pathValue{path, v})
		case bool:
			b := int64(0)
			if v {
				b = 1
			}
			out = append(out, pathValue{path, b})
		case bson.DateTime:
			out = append(out, pathValue{path, int64(v)})
		case bson.Timestamp:
			out = append(out, pathValue{path + ".t", int64(v.T)}, pathValue{path + ".i", int64(v.I)})
		case bson.Decimal128:
			// Test decimals are n.5 or integers: round half to even.
			f, _ := strconv.ParseFloat(v.String(), 64)
			out = append(out, pathValue{path, int64(math.RoundToEven(f))})
		}
	}
	walk("", d)
	return out
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// fixedClock returns a clock that advances one second per call.
func fixedClock(start time.Time) func() time.Time {
	t := start
	return func() time.Time {
		now := t
		t = t.Add(time.Second)
		return now
	}
}

func metadataDoc() bson.D {
	return bson.D{
		{Key: "start", Value: ms(t0)},
		{Key: "buildInfo", Value: bson.D{{Key: "version", Value: "8.0.4"}, {Key: "bits", Value: int32(64)}}},
		{Key: "hostInfo", Value: bson.D{{Key: "system", Value: bson.D{{Key: "hostname", Value: "sim-1"}, {Key: "numCores", Value: int32(8)}}}}},
		{Key: "getCmdLineOpts", Value: bson.D{{Key: "argv", Value: bson.A{"mongod", "--replSet", "rs0"}}}},
		{Key: "end", Value: ms(t0)},
	}
}

// writeSamples writes n samples from gen into a fresh directory.
func writeSamples(t testing.TB, opts WriterOptions, n int, gen func(int) bson.D) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "diagnostic.data")
	if opts.Now == nil {
		opts.Now = fixedClock(t0)
	}
	if opts.Metadata == nil {
		opts.Metadata = metadataDoc()
	}
	w, err := NewWriter(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Add(gen(i)); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chunksOf returns the decoded chunks of the documents.
func chunksOf(t testing.TB, docs []*Document) []*Chunk {
	t.Helper()
	var cs []*Chunk
	for _, d := range docs {
		if d.Type != TypeMetricChunk {
			continue
		}
		c, err := d.Chunk()
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleCounts(cs []*Chunk) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(c.NumSamples)
	}
	return s
}
