package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/store"
)

// A standalone server qmlsab did not start (cmd/mongosim without
// --replSet, as a user's own mongod would be) attaches by URI: the
// trial runs and is valid, replication metrics are absent for a
// standalone rather than zero, and the report's header names what
// answered: the implementation, its version and the topology.
func TestRunAttachesAStandaloneByURIAndTheReportNamesTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a short wall-clock trial on a cmd/mongosim process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	tmp := t.TempDir()
	srv := exec.Command(localMongosim(t), "--port", fmt.Sprint(port), "--dbpath", filepath.Join(tmp, "db"))
	if err := os.MkdirAll(filepath.Join(tmp, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standalone never listened on %s", addr)
		}
	}
	armsFile, wl := filepath.Join(tmp, "arms.yaml"), filepath.Join(tmp, "short.yaml")
	for name, doc := range map[string]string{
		armsFile: "arms:\n  - name: S\n    target: uri\n    uri: \"mongodb://" + addr + "/?directConnection=true\"\n    setParameters: {}\n",
		wl:       "name: short\nkind: spill_to_disk\nspill_to_disk:\n  stormRate: 10\n  phases: {warmup: 1s, storm: 3s, recovery: 1s}\n",
	} {
		if err := os.WriteFile(name, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "run")
	out, code := qmlsab(t, "run", "--arms", "S", "--arms-file", armsFile, "--workload", wl, "--n", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("run against the standalone: exit %d\n%s", code, out)
	}
	r, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ts := r.Manifest.Trials; len(ts) != 1 || ts[0].Status != store.Valid {
		t.Fatalf("trials %+v: want one valid trial\n%s", ts, out)
	}
	if out, code := qmlsab(t, "report", "--format", "md", dir); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Server: mongosim (simulated) (reports version ") || !strings.Contains(string(md), "standalone") {
		t.Errorf("the summary's header does not name the standalone mongosim and its version:\n%s", md)
	}
	if !strings.Contains(string(md), "SIMULAT") {
		t.Errorf("the summary of a mongosim run does not say it is a simulation:\n%s", md)
	}
}
