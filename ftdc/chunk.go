package ftdc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Decoder bounds. Each is checked against the declared value before
// anything is allocated for it, so corrupt or hostile input costs at most
// these amounts of memory.
const (
	// MaxDocumentSize bounds one BSON document of an FTDC file. The
	// buffer for a document also grows only as its bytes actually arrive.
	MaxDocumentSize = 20 << 20
	// MaxChunkUncompressed bounds a chunk's declared (and actual)
	// uncompressed size. mongod itself refuses more than 10,000,000 bytes.
	MaxChunkUncompressed = 16 << 20
	// MaxMetrics bounds the metrics of one chunk.
	MaxMetrics = 1 << 17
	// MaxDeltas bounds the deltas (samples after the reference) of one
	// chunk.
	MaxDeltas = 1 << 20
	// MaxChunkValues bounds metrics × samples of one chunk: the decoded
	// values take 8 bytes each, so a chunk never needs more than 64 MiB.
	// (A full 300-sample chunk may so hold about 28,000 metrics; mongod's
	// own reader stops at 1,000,000 values.)
	MaxChunkValues = 1 << 23
)

// maxDeflateRatio is deflate's largest possible expansion (258 bytes from a
// 2-bit code, about 1032:1): a declared size beyond it cannot be honest.
const maxDeflateRatio = 1032

// Chunk is one decoded metric chunk: a reference document and the values
// of every metric for each of its samples, held column by column.
type Chunk struct {
	// ID is the chunk document's _id: the reference sample's time.
	ID time.Time
	// Reference is the chunk's first sample as stored, non-metric fields
	// (strings and the like) included.
	Reference bson.Raw
	// Metrics describes the columns, in reference-document order.
	Metrics []Metric
	// NumSamples counts the samples: the reference plus its deltas.
	NumSamples int

	values []int64 // column-major: metric i is values[i*NumSamples:(i+1)*NumSamples]
	start  int     // column of the top-level "start" metric, or -1

	indexOnce sync.Once
	index     map[string]int
}

// Column returns every sample's value of metric i (nil for a schema-only
// chunk). The slice aliases the chunk.
func (c *Chunk) Column(i int) []int64 {
	if c.values == nil {
		return nil
	}
	return c.values[i*c.NumSamples : (i+1)*c.NumSamples : (i+1)*c.NumSamples]
}

// Paths returns the metric paths in column order.
func (c *Chunk) Paths() []string {
	p := make([]string, len(c.Metrics))
	for i, m := range c.Metrics {
		p[i] = m.Path
	}
	return p
}

// Lookup returns the column of a dotted metric path. When a path occurs
// twice (BSON allows repeated keys) the first column wins.
func (c *Chunk) Lookup(path string) (int, bool) {
	c.indexOnce.Do(func() {
		c.index = make(map[string]int, len(c.Metrics))
		for i, m := range c.Metrics {
			if _, dup := c.index[m.Path]; !dup {
				c.index[m.Path] = i
			}
		}
	})
	i, ok := c.index[path]
	return i, ok
}

// Value returns metric path's value in sample s.
func (c *Chunk) Value(path string, s int) (int64, bool) {
	i, ok := c.Lookup(path)
	if !ok || s < 0 || s >= c.NumSamples || c.values == nil {
		return 0, false
	}
	return c.values[i*c.NumSamples+s], true
}

// Time returns sample s's time in milliseconds since the epoch: its
// top-level "start" metric, or the chunk's ID when the reference document
// has no "start".
func (c *Chunk) Time(s int) int64 {
	if c.start >= 0 && c.values != nil {
		return c.values[c.start*c.NumSamples+s]
	}
	return c.ID.UnixMilli()
}

// Sample is one sample of a chunk.
type Sample struct {
	c *Chunk
	i int
}

// Index is the sample's position in its chunk.
func (s Sample) Index() int { return s.i }

// Time is the sample's time in milliseconds since the epoch (see
// Chunk.Time).
func (s Sample) Time() int64 { return s.c.Time(s.i) }

// Value returns the sample's value of a metric path.
func (s Sample) Value(path string) (int64, bool) { return s.c.Value(path, s.i) }

// At returns the sample's value of metric column m.
func (s Sample) At(m int) int64 { return s.c.values[m*s.c.NumSamples+s.i] }

// Samples iterates over the chunk's samples in order (none for a
// schema-only chunk).
func (c *Chunk) Samples() iter.Seq2[int, Sample] {
	return func(yield func(int, Sample) bool) {
		if c.values == nil {
			return
		}
		for i := 0; i < c.NumSamples; i++ {
			if !yield(i, Sample{c, i}) {
				return
			}
		}
	}
}

// decoder holds reusable inflate state.
type decoder struct {
	br  bytes.Reader
	zr  io.ReadCloser
	buf []byte
	fl  flattener
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

// DecodeChunk decodes a metric chunk payload: the binary `data` field of a
// type-1 document. The returned chunk has a zero ID. Errors wrap
// ErrCorrupt or ErrTooLarge.
func DecodeChunk(payload []byte) (*Chunk, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	return d.decode(payload, false)
}

// DecodeChunkSchema decodes only a chunk's reference document and metric
// list: NumSamples is set but the chunk holds no values (Column is nil,
// Samples yields nothing). It inflates only as far as the reference
// document and the counts.
func DecodeChunkSchema(payload []byte) (*Chunk, error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	return d.decode(payload, true)
}

// inflate decompresses payload (after its 4-byte length) into d.buf,
// stopping after want bytes when want >= 0. It never holds more than the
// declared length, growing the buffer only as output appears.
func (d *decoder) inflate(payload []byte, want int) ([]byte, error) {
	if len(payload) < 4 {
		return nil, fmt.Errorf("%w: chunk payload of %d bytes", ErrCorrupt, len(payload))
	}
	declared := int64(binary.LittleEndian.Uint32(payload))
	comp := payload[4:]
	if declared > MaxChunkUncompressed {
		return nil, fmt.Errorf("%w: chunk declares %d uncompressed bytes (bound %d)", ErrTooLarge, declared, MaxChunkUncompressed)
	}
	if declared > int64(len(comp))*maxDeflateRatio+1024 {
		return nil, fmt.Errorf("%w: chunk declares %d uncompressed bytes from %d compressed", ErrCorrupt, declared, len(comp))
	}
	d.br.Reset(comp)
	if d.zr == nil {
		zr, err := zlib.NewReader(&d.br)
		if err != nil {
			return nil, fmt.Errorf("%w: chunk zlib header: %v", ErrCorrupt, err)
		}
		d.zr = zr
	} else if err := d.zr.(zlib.Resetter).Reset(&d.br, nil); err != nil {
		return nil, fmt.Errorf("%w: chunk zlib header: %v", ErrCorrupt, err)
	}
	limit := int(declared)
	if want >= 0 && want < limit {
		limit = want
	}
	buf := d.buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				break
			}
			c := 2 * cap(buf)
			if c < 64<<10 {
				c = 64 << 10
			}
			if c > limit+1 {
				c = limit + 1
			}
			nb := make([]byte, len(buf), c)
			copy(nb, buf)
			buf = nb
		}
		n, err := d.zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > int(declared) {
			return nil, fmt.Errorf("%w: chunk inflates to more than its declared %d bytes", ErrCorrupt, declared)
		}
		if want >= 0 && len(buf) >= want {
			break
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: chunk zlib stream: %v", ErrCorrupt, err)
		}
	}
	if cap(buf) <= 4<<20 {
		d.buf = buf[:0]
	}
	return buf, nil
}

func (d *decoder) decode(payload []byte, schemaOnly bool) (*Chunk, error) {
	want := -1
	if schemaOnly {
		// Enough to read the reference document's length, then again for
		// the document and the two counts.
		head, err := d.inflate(payload, 4)
		if err != nil {
			return nil, err
		}
		if len(head) < 4 {
			return nil, fmt.Errorf("%w: chunk too short for a reference document", ErrCorrupt)
		}
		want = int(int32(binary.LittleEndian.Uint32(head))) + 8
		if want < 13 {
			want = 13
		}
	}
	buf, err := d.inflate(payload, want)
	if err != nil {
		return nil, err
	}
	ref, err := leadingDoc(buf)
	if err != nil {
		return nil, fmt.Errorf("chunk reference document: %w", err)
	}
	rest := buf[len(ref):]
	if len(rest) < 8 {
		return nil, fmt.Errorf("%w: chunk ends before its metric and sample counts", ErrCorrupt)
	}
	nm := int64(binary.LittleEndian.Uint32(rest))
	nd := int64(binary.LittleEndian.Uint32(rest[4:]))
	rest = rest[8:]
	switch {
	case nm > MaxMetrics:
		return nil, fmt.Errorf("%w: chunk declares %d metrics (bound %d)", ErrTooLarge, nm, MaxMetrics)
	case nd > MaxDeltas:
		return nil, fmt.Errorf("%w: chunk declares %d deltas (bound %d)", ErrTooLarge, nd, MaxDeltas)
	case nm*(nd+1) > MaxChunkValues:
		return nil, fmt.Errorf("%w: chunk declares %d metrics × %d samples (bound %d values)", ErrTooLarge, nm, nd+1, MaxChunkValues)
	}

	fl := &d.fl
	fl.reset()
	fl.paths, fl.sig = true, false
	fl.limit = int(nm)
	if err := fl.flatten(ref); err != nil {
		if errors.Is(err, ErrTooLarge) && len(fl.values) > int(nm) {
			return nil, fmt.Errorf("%w: header says %d, reference document has more", ErrMetricCount, nm)
		}
		return nil, fmt.Errorf("chunk reference document: %w", err)
	}
	if int64(len(fl.values)) != nm {
		return nil, fmt.Errorf("%w: header says %d, reference document has %d", ErrMetricCount, nm, len(fl.values))
	}

	S := int(nd) + 1
	c := &Chunk{
		Reference:  bson.Raw(bytes.Clone(ref)),
		Metrics:    append([]Metric(nil), fl.metrics...),
		NumSamples: S,
		start:      -1,
	}
	for i, m := range c.Metrics {
		if m.Path == "start" {
			c.start = i
			break
		}
	}
	if schemaOnly {
		return c, nil
	}
	c.values = make([]int64, int(nm)*S)
	for i, v := range fl.values {
		c.values[i*S] = v
	}
	if err := decodeDeltas(c.values, int(nm), S, rest); err != nil {
		return nil, err
	}
	return c, nil
}

var errVarint = fmt.Errorf("%w: truncated or overlong varint in chunk deltas", ErrCorrupt)

// longUvarint reads the varint of more than one byte at p[pos:] and
// returns it with the position after it, or ok false when p holds no whole
// varint there. decodeDeltas reads the one-byte varints that most deltas
// are without a call, and calls this for the others.
func longUvarint(p []byte, pos int) (v uint64, next int, ok bool) {
	x, n := binary.Uvarint(p[pos:])
	return x, pos + n, n > 0
}

// decodeDeltas fills columns 1..S-1 of every metric from the varint
// stream p. A zero delta is followed by the count of further zeros; the run
// carries over metric boundaries and is cut at the end of the chunk.
// Bytes after the last value are ignored, as mongod does.
func decodeDeltas(vals []int64, nm, S int, p []byte) error {
	if S <= 1 {
		return nil
	}
	pos := 0
	var zeros uint64
	for i := 0; i < nm; i++ {
		col := vals[i*S : (i+1)*S : (i+1)*S]
		prev := col[0]
		j := 1
		for j < S {
			if zeros > 0 {
				n := S - j
				if zeros < uint64(n) {
					n = int(zeros)
				}
				fill := col[j : j+n]
				for k := range fill {
					fill[k] = prev
				}
				j += n
				zeros -= uint64(n)
				continue
			}
			var v uint64
			var ok bool
			if pos < len(p) && p[pos] < 0x80 {
				v, pos = uint64(p[pos]), pos+1
			} else if v, pos, ok = longUvarint(p, pos); !ok {
				return errVarint
			}
			if v == 0 { // the count of further zeros follows
				if pos < len(p) && p[pos] < 0x80 {
					zeros, pos = uint64(p[pos]), pos+1
				} else if zeros, pos, ok = longUvarint(p, pos); !ok {
					return errVarint
				}
			}
			prev += int64(v)
			col[j] = prev
			j++
		}
	}
	return nil
}
