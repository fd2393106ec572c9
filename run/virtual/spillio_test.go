package virtual

import (
	"context"
	"math"
	"testing"

	"github.com/qmlsab/qmlsab/store"
)

// TestSpillIOIsConserved runs D and E for a trial and checks, from every
// member's samples, that the model conserves its spill I/O: what the
// disk carried between two samples of one process (writeback plus reads
// that missed the page cache) never exceeds the disk's bandwidth over the
// time between them, and every byte spilled is, at every sample, read
// back, freed with its file, or still held unread by a live file. Before
// spill I/O was conserved a spill write cost CPU only and a getMore read
// back only the bytes it returned (a twentieth of what its query
// spilled), and no sample carried these counters.
func TestSpillIOIsConserved(t *testing.T) {
	for _, name := range []string{"D", "E"} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig(3)
			tr, err := Run(context.Background(), cfg, builtins(t, name)[0])
			if err != nil {
				t.Fatal(err)
			}
			bw := cfg.Hardware.WithDefaults().DiskBytesPerSec
			f := func(s store.Sample, name store.SampleField) float64 {
				v, ok := s.Values[name]
				if !ok {
					t.Fatalf("%s %s at %v: no %s", s.Member, s.ProcessID, s.At, name)
				}
				return v
			}
			last := map[string]store.Sample{}
			var written, readBack, diskBusy float64
			checked := 0
			for _, s := range tr.Records.Samples {
				if !s.Up {
					continue
				}
				w, r := f(s, store.FieldSimSpillWrittenBytes), f(s, store.FieldSimSpillReadBackBytes)
				freed, live := f(s, store.FieldSimSpillUnreadFreedBytes), f(s, store.FieldSimSpillLiveUnreadBytes)
				// The counters are whole bytes (each file's unread bytes are
				// rounded): allow a millionth.
				if math.Abs(w-(r+freed+live)) > max(8, 1e-6*w) {
					t.Fatalf("%s at %v: spilled %.0f B, but read back %.0f + freed unread %.0f + live unread %.0f = %.0f",
						s.ProcessID, s.At, w, r, freed, live, r+freed+live)
				}
				disk := f(s, store.FieldSimSpillDiskReadBytes) + f(s, store.FieldSimSpillWrittenBackBytes)
				if p, ok := last[s.ProcessID]; ok {
					prev := f(p, store.FieldSimSpillDiskReadBytes) + f(p, store.FieldSimSpillWrittenBackBytes)
					dt := s.At.Sub(p.At).Seconds()
					if disk-prev > bw*dt+8 {
						t.Fatalf("%s from %v to %v: the disk carried %.0f B in %.3f s, above its %.0f B/s",
							s.ProcessID, p.At, s.At, disk-prev, dt, bw)
					}
					checked++
					diskBusy += disk - prev
				}
				last[s.ProcessID] = s
			}
			for _, s := range last {
				written += f(s, store.FieldSimSpillWrittenBytes)
				readBack += f(s, store.FieldSimSpillReadBackBytes)
			}
			if checked < 100 || written <= 0 || readBack <= 0 || diskBusy <= 0 {
				t.Fatalf("%d sample intervals checked, %.0f B spilled, %.0f B read back, %.0f B through the disk: the storm did not exercise the spill path",
					checked, written, readBack, diskBusy)
			}
			t.Logf("%s: spilled %.1f GiB, read back %.1f GiB, disk carried %.1f GiB", name, written/(1<<30), readBack/(1<<30), diskBusy/(1<<30))
		})
	}
}
