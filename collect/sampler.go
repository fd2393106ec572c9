package collect

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Sampler reads every member's serverStatus at an interval, each over its
// own direct connection, so a member that is down, slow or hung costs only
// its own sample (a gap), never the others'.
type Sampler struct {
	Members  []string
	Interval time.Duration
	// Timeout bounds one member's sample (default: the interval).
	Timeout time.Duration
	// Census adds a $currentOp census of active operations to each
	// sample (see AddCensus).
	Census bool

	mu      sync.Mutex
	samples []Sample
}

// Run samples until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	if s.Timeout <= 0 {
		s.Timeout = s.Interval
	}
	clients := make([]*mongo.Client, len(s.Members))
	for i, m := range s.Members {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + m + "/?directConnection=true").
			SetServerSelectionTimeout(s.Timeout).SetConnectTimeout(s.Timeout).SetRetryReads(false))
		if err == nil {
			clients[i] = c
		}
	}
	defer func() {
		for _, c := range clients {
			if c != nil {
				dctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = c.Disconnect(dctx)
				cancel()
			}
		}
	}()
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for i, m := range s.Members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.add(sampleMember(ctx, clients[i], m, s.Timeout, s.Census))
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sampler) add(smp Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
}

// Samples returns what was sampled so far.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}

func sampleMember(ctx context.Context, c *mongo.Client, member string, timeout time.Duration, census bool) Sample {
	smp := Sample{At: time.Now(), Member: member}
	if c == nil {
		return smp
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	admin := c.Database("admin")
	hello, err := admin.RunCommand(sctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		return smp
	}
	ss, err := admin.RunCommand(sctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		return smp
	}
	smp.Up = true
	smp.Primary, _ = hello.Lookup("isWritablePrimary").BooleanOK()
	if pid, ok := hello.Lookup("topologyVersion", "processId").ObjectIDOK(); ok {
		smp.ProcessID = pid.Hex()
	}
	smp.Values = Extract(ss)
	if census {
		if ops, err := censusOps(sctx, c); err == nil {
			AddCensus(smp.Values, ops)
		}
	}
	return smp
}

// Change is a topology event seen in the samples: a new primary, or a
// member's process restart.
type Change struct {
	At     time.Time `json:"at"`
	Member string    `json:"member"`
}

// PrimaryChanges counts the times the primary became a different member
// (or a restarted process) between consecutive observations of a primary.
func PrimaryChanges(samples []Sample) int { return len(NewPrimaries(samples)) }

// NewPrimaries are the primary changes, each at the first sample that saw
// the new primary.
func NewPrimaries(samples []Sample) []Change {
	type ident struct{ member, process string }
	var last *ident
	var out []Change
	sorted := append([]Sample(nil), samples...)
	sortByTime(sorted)
	for _, s := range sorted {
		if !s.Up || !s.Primary {
			continue
		}
		cur := ident{s.Member, s.ProcessID}
		if last != nil && *last != cur {
			out = append(out, Change{At: s.At, Member: s.Member})
		}
		last = &cur
	}
	return out
}

// Restarts counts member process restarts seen in the samples.
func Restarts(samples []Sample) int { return len(RestartsSeen(samples)) }

// RestartsSeen are the member restarts, each at the first sample of the
// new process.
func RestartsSeen(samples []Sample) []Change {
	var out []Change
	for _, ss := range ByMember(samples) {
		var prev *Sample
		for i := range ss {
			if !ss[i].Up {
				continue
			}
			if prev != nil && restarted(*prev, ss[i]) {
				out = append(out, Change{At: ss[i].At, Member: ss[i].Member})
			}
			prev = &ss[i]
		}
	}
	return out
}
