package mongosim_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/mongosim"
	"github.com/qmlsab/qmlsab/mongosim/model"
)

// An arm's parameters mean the same on both clocks: the virtual clock
// builds its nodes with model.ParamsFrom, the wall clock's embedded and
// sharded targets start each member with them as startup --setParameter
// values. Both take them as one set, checked once on the values the set
// leaves, so a pair that is consistent only together (max 2 below the
// default min 4, min 1 beside it) is accepted by both, and a set that is
// inconsistent at the end is refused by both.
func TestStartupParametersMeanWhatTheVirtualClockReads(t *testing.T) {
	sets := []struct {
		params map[string]string
		ok     bool
	}{
		{map[string]string{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "1"}, true},
		{map[string]string{"throughputProbingMinConcurrency": "200", "throughputProbingMaxConcurrency": "300"}, true},
		{map[string]string{"throughputProbingMaxConcurrency": "2"}, false},
		{map[string]string{"throughputProbingMaxConcurrency": "2", "throughputProbingMinConcurrency": "3"}, false},
		{map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "30", "queryMemoryLoadSheddingHighMarkPercent": "70"}, true},
		{map[string]string{"queryMemoryLoadSheddingLowMarkPercent": "80", "queryMemoryLoadSheddingHighMarkPercent": "70"}, false},
	}
	for _, c := range sets {
		_, virtualErr := model.ParamsFrom(c.params)
		s, wallErr := mongosim.Start(mongosim.Options{Parameters: c.params})
		if (virtualErr == nil) != c.ok || (wallErr == nil) != c.ok {
			t.Errorf("%v: virtual clock %v, wall clock (startup) %v; want both ok=%v", c.params, virtualErr, wallErr, c.ok)
		}
		if wallErr != nil {
			continue
		}
		checkParameters(t, s, c.params)
		s.Kill()
	}
}

// checkParameters asserts that getParameter on s returns every value of
// params, as its declared type formats it.
func checkParameters(t *testing.T, s *mongosim.Server, params map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr() + "/?directConnection=true").
		SetServerMonitoringMode(options.ServerMonitoringModePoll))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = client.Disconnect(ctx) }() // before the caller kills s
	cmd := bson.D{{Key: "getParameter", Value: 1}}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		cmd = append(cmd, bson.E{Key: name, Value: 1})
	}
	r, err := client.Database("admin").RunCommand(ctx, cmd).Raw()
	if err != nil {
		t.Fatalf("getParameter: %v", err)
	}
	for name, want := range params {
		spec, _ := model.LookupParam(name)
		wantValue, _ := spec.ParseValue(want)
		var got any
		switch v := r.Lookup(name); v.Type {
		case bson.TypeInt32, bson.TypeInt64:
			got = v.AsInt64()
		case bson.TypeDouble:
			got = v.Double()
		default:
			got = v.String()
		}
		if got != wantValue {
			t.Errorf("getParameter %s = %v (%T), want %v", name, got, got, wantValue)
		}
	}
}
