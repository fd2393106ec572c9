package target

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
	"github.com/qmlsab/qmlsab/internal/stormtest/remoteset"
)

// lowMark is the parameter the tests' arms set.
const lowMark = "queryMemoryLoadSheddingLowMarkPercent"

// A uri target whose connection string names loopback members only, in a
// set whose third member is on another machine (found through the
// others' hello.hosts), is refused before qmlsab sends any member a
// command: the refusal names the discovered host, and no member's
// parameter is changed. With --allow-remote the same set is attached,
// the third member with it.
func TestURITargetRefusesAMemberDiscoveredOutsideLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rs := remoteset.StartRemoteMemberSet(t, ctx, nil)
	before := remoteset.Parameter(t, ctx, rs.Remote, lowMark)
	arm := arms.Arm{Name: "R", Target: arms.TargetURI, URI: rs.SeedURI, SetParameters: map[string]string{lowMark: "17"}}
	attached, err := Provision(ctx, arm, Options{})
	if err == nil {
		defer attached.Close(context.Background())
		t.Error("a set with a member outside loopback was attached without --allow-remote")
	}
	for _, want := range []string{"arm R", "refusing non-loopback target " + rs.Remote, "--allow-remote"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	for _, m := range rs.Members {
		if got := remoteset.Parameter(t, ctx, m.Addr(), lowMark); got != before {
			t.Errorf("member %s: %s is %s after the refusal, want %s untouched", m.Addr(), lowMark, got, before)
		}
	}

	d, err := Provision(ctx, arm, Options{AllowRemote: true})
	if err != nil {
		t.Fatalf("--allow-remote given: %v", err)
	}
	defer d.Close(context.Background())
	if !slices.Contains(d.Members(), rs.Remote) {
		t.Errorf("members %v, want the discovered %s among them", d.Members(), rs.Remote)
	}
	if got := remoteset.Parameter(t, ctx, rs.Remote, lowMark); !strings.Contains(got, "17") {
		t.Errorf("--allow-remote given: %s on %s is %s, want the arm's 17", lowMark, rs.Remote, got)
	}
}

// Through a mongos on loopback, a shard on another machine (listShards
// names it) is refused before qmlsab connects to it, naming the shard and
// its member; the member's parameter is untouched. With --allow-remote
// the cluster is attached with that shard.
func TestURITargetRefusesAShardOutsideLoopbackThroughTheRouter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := remoteset.StartRemoteShardCluster(t, ctx, nil)
	before := remoteset.Parameter(t, ctx, cl.Remote, lowMark)
	arm := arms.Arm{Name: "S", Target: arms.TargetURI, URI: cl.RouterURI, Topology: arms.TopologySharded, SetParameters: map[string]string{lowMark: "17"}}
	attached, err := Provision(ctx, arm, Options{})
	if err == nil {
		defer attached.Close(context.Background())
		t.Error("a shard outside loopback was attached without --allow-remote")
	}
	for _, want := range []string{"arm S", "shard sh0 member " + cl.Remote, "listShards", "refusing non-loopback target " + cl.Remote, "--allow-remote"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if got := remoteset.Parameter(t, ctx, cl.Remote, lowMark); got != before {
		t.Errorf("shard member %s: %s is %s after the refusal, want %s untouched", cl.Remote, lowMark, got, before)
	}

	d, err := Provision(ctx, arm, Options{AllowRemote: true})
	if err != nil {
		t.Fatalf("--allow-remote given: %v", err)
	}
	defer d.Close(context.Background())
	if sh := ShardingOf(d); sh == nil || sh.ShardOf()[cl.Remote] != "sh0" {
		t.Errorf("--allow-remote given: shards %v, want %s in sh0", d.Members(), cl.Remote)
	}
}
