package workload

import (
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/stormtest"
	"github.com/qmlsab/qmlsab/mongosim"
)

// The merge driver's clients to one member (failpoints, shed counters,
// $out leftovers) live for a command or two; an awaitable hello on one of
// them is what a Disconnect waited out for 10 s between merge ops. None
// may start one, across as many checks as the default monitor needs to.
func TestMergeDriverDirectClientsAwaitNoHeartbeat(t *testing.T) {
	s, err := mongosim.Start(mongosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	d := &MergeDriver{URI: "mongodb://" + s.Addr() + "/"}
	stormtest.NoAwaitedHeartbeat(t, d.directOptions(s.Addr()).SetHeartbeatInterval(500*time.Millisecond))
}
