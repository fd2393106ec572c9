package ftdc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// daySamples is a day at one sample a second.
const daySamples = 86400

// benchSamples is how many 1 Hz samples BenchmarkDecode decodes: an hour
// by default (writing them takes about a second), a whole day with
// QMLSAB_FTDC_BENCH_SAMPLES=86400 (tens of seconds to write; the decode
// rates are the same, since every chunk is alike).
func benchSamples() int {
	if n, err := strconv.Atoi(os.Getenv("QMLSAB_FTDC_BENCH_SAMPLES")); err == nil && n > 0 {
		return n
	}
	return 3600
}

// dayTemplate builds a serverStatus-like sample with about 1,500 metrics
// and returns it with the offset and type of every metric value in its
// bytes, so samples can be produced by patching values in place.
func dayTemplate() ([]byte, []slot) {
	num := func(prefix string, n int, f func(int) any) bson.D {
		d := make(bson.D, n)
		for i := range d {
			d[i] = bson.E{Key: fmt.Sprintf("%s %d", prefix, i), Value: f(i)}
		}
		return d
	}
	i64 := func(int) any { return int64(0) }
	i32 := func(int) any { return int32(0) }
	f64 := func(int) any { return float64(0) }
	commands := make(bson.D, 120)
	for i := range commands {
		commands[i] = bson.E{Key: fmt.Sprintf("cmd%d", i), Value: bson.D{{Key: "failed", Value: int64(0)}, {Key: "total", Value: int64(0)}}}
	}
	disks := bson.A{}
	for i := 0; i < 4; i++ {
		disks = append(disks, append(bson.D{{Key: "name", Value: fmt.Sprintf("nvme%dn1", i)}}, num("stat", 14, i64)...))
	}
	members := bson.A{}
	for i := 0; i < 3; i++ {
		members = append(members, bson.D{
			{Key: "name", Value: fmt.Sprintf("host%d:27017", i)},
			{Key: "health", Value: float64(1)},
			{Key: "state", Value: int32(1)},
			{Key: "optime", Value: bson.D{{Key: "ts", Value: bson.Timestamp{T: 1, I: 1}}, {Key: "t", Value: int64(3)}}},
			{Key: "optimeDate", Value: bson.DateTime(0)},
			{Key: "self", Value: i == 0},
		})
	}
	doc := bson.D{
		{Key: "start", Value: bson.DateTime(0)},
		{Key: "serverStatus", Value: bson.D{
			{Key: "start", Value: bson.DateTime(0)},
			{Key: "host", Value: "sim-1:27017"},
			{Key: "version", Value: "8.0.4"},
			{Key: "uptime", Value: float64(0)},
			{Key: "localTime", Value: bson.DateTime(0)},
			{Key: "asserts", Value: num("a", 5, i32)},
			{Key: "connections", Value: num("c", 12, i32)},
			{Key: "opcounters", Value: num("op", 6, i64)},
			{Key: "mem", Value: append(num("m", 4, i32), bson.E{Key: "supported", Value: true})},
			{Key: "wiredTiger", Value: bson.D{
				{Key: "cache", Value: num("cache", 260, i64)},
				{Key: "transaction", Value: num("txn", 80, i64)},
				{Key: "block-manager", Value: num("bm", 40, i64)},
				{Key: "connection", Value: num("conn", 60, f64)},
				{Key: "cursor", Value: num("cur", 90, i64)},
				{Key: "log", Value: num("log", 70, i64)},
			}},
			{Key: "metrics", Value: bson.D{
				{Key: "commands", Value: commands},
				{Key: "document", Value: num("d", 8, i64)},
				{Key: "query", Value: num("q", 60, i64)},
				{Key: "repl", Value: num("r", 80, i64)},
			}},
			{Key: "end", Value: bson.DateTime(0)},
		}},
		{Key: "replSetGetStatus", Value: bson.D{{Key: "set", Value: "rs0"}, {Key: "date", Value: bson.DateTime(0)}, {Key: "members", Value: members}}},
		{Key: "systemMetrics", Value: bson.D{
			{Key: "cpu", Value: num("cpu", 20, i64)},
			{Key: "memory", Value: num("mem", 40, i64)},
			{Key: "netstat", Value: num("net", 150, i64)},
			{Key: "vmstat", Value: num("vm", 190, i64)},
			{Key: "disks", Value: disks},
		}},
		{Key: "end", Value: bson.DateTime(0)},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		panic(err)
	}
	var slots []slot
	var walk func(body []byte, base int)
	walk = func(body []byte, base int) {
		off := base
		for len(body) > 0 {
			e, rest, err := nextElement(body)
			if err != nil {
				panic(err)
			}
			valOff := off + 2 + len(e.key)
			switch e.typ {
			case bsonDocument, bsonArray:
				walk(e.val[4:len(e.val)-1], valOff+4)
			case bsonDouble, bsonInt32, bsonInt64, bsonBool, bsonDateTime, bsonTimestamp:
				slots = append(slots, slot{off: valOff, typ: e.typ})
			}
			off += len(body) - len(rest)
			body = rest
		}
	}
	walk(raw[4:len(raw)-1], 4)
	return raw, slots
}

type slot struct {
	off int
	typ byte
}

// patcher writes sample i's values into a copy of the template: most
// metrics never change, many are counters with small steps, some are
// gauges wandering about, a few are byte counters with large steps.
type patcher struct {
	raw   []byte
	slots []slot
	state []int64
	rng   uint64
}

func (p *patcher) next() uint64 {
	p.rng ^= p.rng << 13
	p.rng ^= p.rng >> 7
	p.rng ^= p.rng << 17
	return p.rng
}

func (p *patcher) sample(i int) []byte {
	at := t0.Add(time.Duration(i) * time.Second).UnixMilli()
	if p.state == nil {
		p.state = make([]int64, len(p.slots))
		p.rng = 0x9E3779B97F4A7C15
	}
	for k, s := range p.slots {
		v := p.state[k]
		switch class := k % 20; {
		case s.typ == bsonDateTime:
			v = at + int64(k%10)
		case s.typ == bsonBool:
			v = 1
		case class < 9: // constant
		case class < 15: // counter, small steps, often idle
			if r := p.next(); r&1 == 0 {
				v += int64(r>>1) % 20
			}
		case class < 18: // gauge
			v += int64(p.next()%201) - 100
		default: // byte counter
			v += int64(p.next() % 100000)
		}
		p.state[k] = v
		b := p.raw[s.off:]
		switch s.typ {
		case bsonDouble:
			binary.LittleEndian.PutUint64(b, math.Float64bits(float64(v)))
		case bsonInt32:
			binary.LittleEndian.PutUint32(b, uint32(int32(v)))
		case bsonInt64, bsonDateTime:
			binary.LittleEndian.PutUint64(b, uint64(v))
		case bsonTimestamp:
			binary.LittleEndian.PutUint64(b, uint64(at/1000)<<32|uint64(i%7))
		case bsonBool:
			b[0] = byte(v)
		}
	}
	return p.raw
}

var benchDay struct {
	once    sync.Once
	samples int
	files   [][]byte
	metrics int
	bytes   int64
	gen     time.Duration
	err     error
}

// writeDay writes a day of samples with the Writer and keeps the files in
// memory, so the benchmark measures decoding, not the disk.
func writeDay() {
	d := &benchDay
	start := time.Now()
	tmp, err := os.MkdirTemp("", "ftdc-bench-")
	if err != nil {
		d.err = err
		return
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "diagnostic.data")
	raw, slots := dayTemplate()
	p := &patcher{raw: raw, slots: slots}
	w, err := NewWriter(dir, WriterOptions{InterimSamples: -1, MaxDirectorySize: -1, Now: fixedClock(t0), Metadata: metadataDoc()})
	if err != nil {
		d.err = err
		return
	}
	d.samples = benchSamples()
	for i := 0; i < d.samples; i++ {
		if err := w.Add(bson.Raw(p.sample(i))); err != nil {
			d.err = err
			return
		}
	}
	if err := w.Close(); err != nil {
		d.err = err
		return
	}
	files, err := Files(dir)
	if err != nil {
		d.err = err
		return
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			d.err = err
			return
		}
		d.files = append(d.files, b)
		d.bytes += int64(len(b))
	}
	var fl flattener
	fl.limit = -1
	fl.flatten(raw)
	d.metrics = len(fl.values)
	d.gen = time.Since(start)
}

// decodeDay decodes every chunk of the day and touches every value.
func decodeDay(files [][]byte) (samples int, sum int64, err error) {
	for _, f := range files {
		r := NewReader(bytes.NewReader(f))
		for {
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return 0, 0, err
			}
			if d.Type != TypeMetricChunk {
				continue
			}
			c, err := d.Chunk()
			if err != nil {
				return 0, 0, err
			}
			samples += c.NumSamples
			for _, v := range c.values {
				sum += v
			}
		}
	}
	return samples, sum, nil
}

// BenchmarkDecode decodes an hour (QMLSAB_FTDC_BENCH_SAMPLES: any number)
// of 1 Hz samples with about 1,500 metrics, written by the Writer. MB/s
// counts FTDC file bytes; values/s counts samples × metrics; s/day is the
// time a day of such samples takes at that rate.
func BenchmarkDecode(b *testing.B) {
	benchDay.once.Do(writeDay)
	d := &benchDay
	if d.err != nil {
		b.Fatal(d.err)
	}
	b.Logf("%d samples: %d files, %.1f MB, %d metrics, generated in %v", d.samples, len(d.files), float64(d.bytes)/1e6, d.metrics, d.gen.Round(time.Millisecond))
	b.SetBytes(d.bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, _, err := decodeDay(d.files)
		if err != nil {
			b.Fatal(err)
		}
		if n != d.samples {
			b.Fatalf("decoded %d samples, want %d", n, d.samples)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(d.samples*d.metrics)/sec, "values/s")
	b.ReportMetric(sec*daySamples/float64(d.samples), "s/day")
}
