package history

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A mongodb:// history nobody answers at is reported within a bounded
// wait (5 s, or the URI's serverSelectionTimeoutMS), in one line naming
// the host and why it was not reached, not the driver's topology dump
// after 30 s.
func TestUnreachableMongoHistoryIsOneLineNamingTheHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	for _, uri := range []string{"mongodb://" + host + "/", "mongodb://" + host + "/?serverSelectionTimeoutMS=1500"} {
		begun := time.Now()
		st, err := OpenReadOnly(context.Background(), uri)
		if err == nil {
			st.Close()
			t.Fatalf("%s: opened", uri)
		}
		msg := err.Error()
		if !strings.Contains(msg, "connecting: no server reachable: "+host+" (") || strings.ContainsAny(msg, "{}\n") {
			t.Errorf("%s: %q; want one line naming %s", uri, msg, host)
		}
		// The driver's default wait is 30 s; the bound is far below it.
		if took := time.Since(begun); took > 25*time.Second {
			t.Errorf("%s: took %v to give up", uri, took)
		}
	}
}
