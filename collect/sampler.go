package collect

import (
	"context"
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/internal/mongoclient"
	"github.com/qmlsab/qmlsab/store"

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
	// ShardOf labels each member of a sharded cluster with its shard
	// (store.Sample.Shard); nil on a replica set.
	ShardOf map[string]string
	// Routers are sampled too (their samples are labelled "mongos" and
	// never primary): what a router reports beside the shards.
	Routers []string
	// Guard is which hosts the sampler may connect to (the zero Guard:
	// the loopback range only).
	Guard mongoclient.Guard

	mu      sync.Mutex
	samples []store.Sample
}

// Run samples until ctx ends.
func (s *Sampler) Run(ctx context.Context) {
	if s.Timeout <= 0 {
		s.Timeout = s.Interval
	}
	hosts := append(append([]string(nil), s.Members...), s.Routers...)
	clients := make([]*mongo.Client, len(hosts))
	for i, m := range hosts {
		c, err := mongo.Connect(s.Guard.Client(options.Client().ApplyURI("mongodb://" + m + "/?directConnection=true").
			SetServerSelectionTimeout(s.Timeout).SetConnectTimeout(s.Timeout).SetRetryReads(false)))
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
		for i, m := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				smp := sampleMember(ctx, clients[i], m, s.Timeout, s.Census && i < len(s.Members))
				if i >= len(s.Members) {
					smp.Shard, smp.Primary = RouterLabel, false
				} else {
					smp.Shard = s.ShardOf[m]
				}
				s.add(smp)
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

// RouterLabel is a router's store.Sample.Shard.
const RouterLabel = "mongos"

func (s *Sampler) add(smp store.Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, smp)
}

// Samples returns what was sampled so far.
func (s *Sampler) Samples() []store.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Sample(nil), s.samples...)
}

// helloFacts reads a hello reply: whether the member is the writable
// primary (a missing or non-boolean answer is not), its process id (empty
// when topologyVersion.processId is missing or not an ObjectId) and the
// member it names as its set's primary (empty when it names none).
func helloFacts(hello bson.Raw) (primary bool, processID, seenPrimary string) {
	hello = readable(hello)
	primary, _ = hello.Lookup("isWritablePrimary").BooleanOK()
	if pid, ok := hello.Lookup("topologyVersion", "processId").ObjectIDOK(); ok {
		processID = pid.Hex()
	}
	seenPrimary, _ = hello.Lookup("primary").StringValueOK()
	return primary, processID, seenPrimary
}

func sampleMember(ctx context.Context, c *mongo.Client, member string, timeout time.Duration, census bool) store.Sample {
	smp := store.Sample{At: time.Now(), Member: member}
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
	smp.Primary, smp.ProcessID, smp.SeenPrimary = helloFacts(hello)
	smp.Values = Extract(ss)
	if census {
		if ops, err := censusOps(sctx, c); err == nil {
			AddCensus(smp.Values, ops)
		}
	}
	return smp
}
