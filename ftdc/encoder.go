package ftdc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// DefaultSamplesPerChunk is mongod's samples per archived chunk: the
// reference and 299 deltas.
const DefaultSamplesPerChunk = 300

// chunkBuilder accumulates samples of one schema into a chunk, the way
// mongod's compressor does: the first sample is the reference; each later
// one is stored as per-metric deltas from its predecessor; a sample of
// another schema closes the chunk and becomes the next reference; the
// chunk closes when it holds maxSamples samples.
type chunkBuilder struct {
	maxSamples int

	ref     []byte
	refTime time.Time
	refSig  []byte
	nm      int
	prev    []int64
	deltas  []uint64 // column-major, stride deltas per metric
	stride  int      // most deltas this chunk may hold
	nd      int
	est     int // bound on the encoded deltas' size, less one run

	fl  flattener
	raw []byte
	zws map[int]*zlib.Writer // by compression level
	out bytes.Buffer
}

func newChunkBuilder(maxSamples int) *chunkBuilder {
	if maxSamples < 2 {
		maxSamples = 2
	}
	b := &chunkBuilder{maxSamples: maxSamples}
	b.fl.sig = true
	b.fl.limit = MaxMetrics
	return b
}

// empty reports whether no sample is pending.
func (b *chunkBuilder) empty() bool { return b.ref == nil }

// finished is a closed chunk: its _id and payload.
type finished struct {
	id      time.Time
	payload []byte
}

// add appends one framed sample document taken at t. It returns the chunk
// it closed, if any: the previous chunk when the schema changed (the sample
// then starts the next one) or the current chunk when the sample filled
// it.
func (b *chunkBuilder) add(sample []byte, t time.Time) (*finished, error) {
	b.fl.reset()
	if err := b.fl.flatten(sample); err != nil {
		return nil, fmt.Errorf("ftdc: sample: %w", err)
	}
	if b.ref == nil || !bytes.Equal(b.fl.sigBuf, b.refSig) {
		if len(sample)+8 > MaxChunkUncompressed {
			return nil, fmt.Errorf("ftdc: sample of %d bytes is beyond the decoder's bounds", len(sample))
		}
		done, err := b.finish(zlib.DefaultCompression)
		if err != nil {
			return nil, err
		}
		b.start(sample, t)
		return done, nil
	}
	stride := b.stride
	est := 0
	for i, v := range b.fl.values {
		d := uint64(v) - uint64(b.prev[i])
		b.deltas[i*stride+b.nd] = d
		if d != 0 {
			est += (bits.Len64(d)+6)/7 + runCost
		}
	}
	b.est += est
	b.prev, b.fl.values = b.fl.values, b.prev
	b.nd++
	if b.nd == stride || !b.roomForOneMore() {
		return b.finish(zlib.DefaultCompression)
	}
	return nil, nil
}

// roomForOneMore reports whether one more sample keeps the chunk within
// the decoder's bounds (MaxChunkValues, MaxChunkUncompressed), so that
// every chunk written can be read back; a chunk that would outgrow them is
// closed early.
func (b *chunkBuilder) roomForOneMore() bool {
	if b.nm*(b.nd+2) > MaxChunkValues {
		return false
	}
	return len(b.ref)+8+b.est+runCost+b.nm*(binary.MaxVarintLen64+runCost) <= MaxChunkUncompressed
}

// runCost bounds the bytes of one zero run (a 0 and a varint count). Runs
// are separated by non-zero deltas, so there is at most one more run than
// non-zero deltas; charging each non-zero delta one run, plus one, bounds
// the encoded size from above.
const runCost = 1 + binary.MaxVarintLen64

func (b *chunkBuilder) start(sample []byte, t time.Time) {
	b.ref = append(b.ref[:0], sample...)
	b.refTime = t
	b.refSig = append(b.refSig[:0], b.fl.sigBuf...)
	b.nm = len(b.fl.values)
	b.prev, b.fl.values = b.fl.values, b.prev
	b.nd = 0
	b.est = 0
	// Hold no more deltas than a decodable chunk may (the flattener's
	// MaxMetrics limit keeps this at 63 or more).
	b.stride = b.maxSamples - 1
	if b.nm > 0 && b.nm*(b.stride+1) > MaxChunkValues {
		b.stride = MaxChunkValues/b.nm - 1
	}
	need := b.nm * b.stride
	if cap(b.deltas) < need {
		b.deltas = make([]uint64, need)
	}
	b.deltas = b.deltas[:need]
}

// finish closes the pending chunk (if any) and empties the builder.
func (b *chunkBuilder) finish(level int) (*finished, error) {
	if b.ref == nil {
		return nil, nil
	}
	p, err := b.payload(level)
	if err != nil {
		return nil, err
	}
	done := &finished{id: b.refTime, payload: bytes.Clone(p)}
	b.ref = nil
	return done, nil
}

// uncompressed lays out the pending chunk before compression: reference
// document, uint32 LE metric count, uint32 LE delta count, then each
// metric's deltas as varints with zero runs written as 0 and the count of
// further zeros; a run carries across metrics and is flushed only before a
// non-zero delta or after the last metric.
func (b *chunkBuilder) uncompressed() []byte {
	buf := append(b.raw[:0], b.ref...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(b.nm))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(b.nd))
	if b.nm > 0 && b.nd > 0 {
		stride := b.stride
		var zeros uint64
		for i := 0; i < b.nm; i++ {
			for _, d := range b.deltas[i*stride : i*stride+b.nd] {
				if d == 0 {
					zeros++
					continue
				}
				if zeros > 0 {
					buf = append(buf, 0)
					buf = binary.AppendUvarint(buf, zeros-1)
					zeros = 0
				}
				buf = binary.AppendUvarint(buf, d)
			}
		}
		if zeros > 0 {
			buf = append(buf, 0)
			buf = binary.AppendUvarint(buf, zeros-1)
		}
	}
	b.raw = buf
	return buf
}

// payload compresses the pending chunk without closing it. The result
// aliases the builder until the next call.
func (b *chunkBuilder) payload(level int) ([]byte, error) {
	raw := b.uncompressed()
	if len(raw) > math.MaxUint32 {
		return nil, fmt.Errorf("ftdc: chunk of %d bytes is too large", len(raw))
	}
	b.out.Reset()
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(raw)))
	b.out.Write(n[:])
	zw := b.zws[level]
	if zw == nil {
		var err error
		if zw, err = zlib.NewWriterLevel(&b.out, level); err != nil {
			return nil, err
		}
		if b.zws == nil {
			b.zws = map[int]*zlib.Writer{}
		}
		b.zws[level] = zw
	} else {
		zw.Reset(&b.out)
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.out.Bytes(), nil
}

// EncodeChunk encodes samples that share one schema into a metric chunk
// payload (the `data` field of a type-1 document), compressed at zlib's
// default level. It fails if the samples' schemas differ or if they do not
// fit in one chunk within the decoder's bounds. Samples may be
// bson.Raw, []byte holding one BSON document, or anything bson.Marshal
// accepts.
func EncodeChunk(samples ...any) ([]byte, error) {
	if len(samples) == 0 {
		return nil, errors.New("ftdc: EncodeChunk needs at least one sample")
	}
	b := newChunkBuilder(len(samples) + 1)
	for i, s := range samples {
		raw, err := toRaw(s)
		if err != nil {
			return nil, err
		}
		done, err := b.add(raw, time.Time{})
		if err != nil {
			return nil, err
		}
		if done != nil {
			return nil, fmt.Errorf("ftdc: EncodeChunk: sample %d changes the schema or overflows the chunk", i)
		}
	}
	done, err := b.finish(zlib.DefaultCompression)
	if err != nil {
		return nil, err
	}
	return done.payload, nil
}

// toRaw turns a sample into framed BSON bytes.
func toRaw(v any) ([]byte, error) {
	switch v := v.(type) {
	case bson.Raw:
		if _, err := docBody(v); err != nil {
			return nil, fmt.Errorf("ftdc: sample: %w", err)
		}
		return v, nil
	case []byte:
		if _, err := docBody(v); err != nil {
			return nil, fmt.Errorf("ftdc: sample: %w", err)
		}
		return v, nil
	case nil:
		return nil, errors.New("ftdc: nil document")
	}
	b, err := bson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ftdc: marshal: %w", err)
	}
	return b, nil
}

// sampleTime is a sample's top-level "start" Date, if it has one.
func sampleTime(doc []byte) (time.Time, bool) {
	e, ok, err := lookupTop(doc, "start")
	if err != nil || !ok || e.typ != bsonDateTime {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.LittleEndian.Uint64(e.val))).UTC(), true
}

// Document types.
const (
	TypeMetadata      = 0 // one-off metadata: buildInfo, hostInfo, getCmdLineOpts
	TypeMetricChunk   = 1 // compressed samples
	TypeMetadataDelta = 2 // periodic metadata, full or as changes
)

// docBuilder assembles a BSON document by hand.
type docBuilder struct{ b []byte }

func (d *docBuilder) begin() { d.b = append(d.b[:0], 0, 0, 0, 0) }

func (d *docBuilder) key(t byte, k string) {
	d.b = append(d.b, t)
	d.b = append(d.b, k...)
	d.b = append(d.b, 0)
}

func (d *docBuilder) date(k string, t time.Time) {
	d.key(bsonDateTime, k)
	d.b = binary.LittleEndian.AppendUint64(d.b, uint64(t.UnixMilli()))
}

func (d *docBuilder) int32(k string, v int32) {
	d.key(bsonInt32, k)
	d.b = binary.LittleEndian.AppendUint32(d.b, uint32(v))
}

func (d *docBuilder) binary(k string, p []byte) {
	d.key(bsonBinary, k)
	d.b = binary.LittleEndian.AppendUint32(d.b, uint32(len(p)))
	d.b = append(d.b, 0) // generic subtype
	d.b = append(d.b, p...)
}

func (d *docBuilder) doc(k string, doc []byte) {
	d.key(bsonDocument, k)
	d.b = append(d.b, doc...)
}

func (d *docBuilder) end() []byte {
	d.b = append(d.b, 0)
	binary.LittleEndian.PutUint32(d.b, uint32(len(d.b)))
	return d.b
}

// beginFTDCDocument starts an FTDC document with what every type has
// first: its _id (a date) and its type.
func beginFTDCDocument(id time.Time, docType int32) *docBuilder {
	d := &docBuilder{}
	d.begin()
	d.date("_id", id)
	d.int32("type", docType)
	return d
}

// MetadataDocument builds a type-0 document {_id, type: 0, doc}.
func MetadataDocument(id time.Time, doc bson.Raw) bson.Raw {
	d := beginFTDCDocument(id, TypeMetadata)
	d.doc("doc", doc)
	return d.end()
}

// ChunkDocument builds a type-1 document {_id, type: 1, data}.
func ChunkDocument(id time.Time, payload []byte) bson.Raw {
	d := beginFTDCDocument(id, TypeMetricChunk)
	d.binary("data", payload)
	return d.end()
}

// MetadataDeltaDocument builds a type-2 document {_id, type: 2, index,
// doc}: index 0 carries a full periodic-metadata document, index n > 0 the
// n-th set of changes since it.
func MetadataDeltaDocument(id time.Time, index int32, doc bson.Raw) bson.Raw {
	d := beginFTDCDocument(id, TypeMetadataDelta)
	d.int32("index", index)
	d.doc("doc", doc)
	return d.end()
}
