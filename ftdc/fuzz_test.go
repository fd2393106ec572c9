package ftdc

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary bytes both to the file reader (decoding every
// chunk it finds) and to the chunk decoder directly. Nothing may panic,
// every error must be one of the package's, and decoded chunks must be
// self-consistent. Allocation stays within the documented bounds (the
// fuzzer's own memory limit catches a breach).
func FuzzDecode(f *testing.F) {
	// Seeds beyond those in testdata/fuzz/FuzzDecode.
	ref := mustMarshal(f, handRef)
	f.Add(handChunk(f, ref, 5, 4, handDeltas))
	payload, _ := EncodeChunk(serverStatusSample(0), serverStatusSample(1), serverStatusSample(2))
	f.Add(payload)
	var file []byte
	file = append(file, MetadataDocument(t0, mustMarshal(f, metadataDoc()))...)
	file = append(file, ChunkDocument(t0, payload)...)
	file = append(file, MetadataDeltaDocument(t0, 0, mustMarshal(f, metadataDoc()))...)
	f.Add(file)
	f.Add(file[:len(file)-7])

	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewNamedReader(bytes.NewReader(data), "fuzz")
		for i := 0; i < 64; i++ {
			d, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var fe *Error
				if !errors.As(err, &fe) || fe.File != "fuzz" || fe.Offset < 0 || fe.Offset > int64(len(data)) {
					t.Fatalf("unlocated error %v", err)
				}
				continue
			}
			if d.Offset < 0 || d.Offset+int64(len(d.Raw)) > int64(len(data)) {
				t.Fatalf("document at %d of %d bytes overruns %d", d.Offset, len(d.Raw), len(data))
			}
			if d.Type == TypeMetricChunk {
				s, serr := d.Schema()
				c, err := d.Chunk()
				if err == nil {
					checkChunk(t, c)
					if serr != nil || len(s.Metrics) != len(c.Metrics) || s.NumSamples != c.NumSamples {
						t.Fatalf("schema-only decode disagrees: %v", serr)
					}
				}
			}
		}
		c, err := DecodeChunk(data)
		if err == nil {
			checkChunk(t, c)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unclassified error %v", err)
		}
		if _, err := DecodeChunkSchema(data); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unclassified schema error %v", err)
		}
	})
}

func checkChunk(t *testing.T, c *Chunk) {
	t.Helper()
	if len(c.Metrics) > MaxMetrics || c.NumSamples < 1 || c.NumSamples > MaxDeltas+1 || len(c.Metrics)*c.NumSamples > MaxChunkValues {
		t.Fatalf("chunk beyond bounds: %d metrics × %d samples", len(c.Metrics), c.NumSamples)
	}
	if len(c.values) != len(c.Metrics)*c.NumSamples {
		t.Fatalf("%d values for %d × %d", len(c.values), len(c.Metrics), c.NumSamples)
	}
	for _, s := range c.Samples() {
		_ = s.Time()
		for m := range c.Metrics {
			_ = s.At(m)
		}
	}
	for i, m := range c.Metrics {
		if k, ok := c.Lookup(m.Path); !ok || k > i {
			t.Fatalf("path %q of column %d looks up as %d", m.Path, i, k)
		}
	}
	_ = time.UnixMilli(c.Time(0))
}
