package ferretdb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// buildQmlsab builds qmlsab's command from the root module, as the
// product is built (its go.mod and go.sum, not this module's), into a
// temporary folder.
func buildQmlsab(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "qmlsab")
	cmd := goCmd(t, "build", "-o", bin, "./cmd/qmlsab")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/qmlsab: %v\n%s", err, out)
	}
	return bin
}

// runQmlsab runs the binary with a hang guard and returns its combined
// output and exit code; a process that did not exit by itself fails the
// test.
func runQmlsab(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("qmlsab %s did not finish in 10 minutes:\n%s", strings.Join(args, " "), out.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	t.Fatalf("qmlsab %s: %v", strings.Join(args, " "), err)
	return "", -1
}

// goPanic is the Go runtime's report of a panic or fatal error.
var goPanic = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[)`)

// manifestTrials reads the trials' statuses and reasons from a run
// folder's manifest.json.
func manifestTrials(t *testing.T, dir string) []struct{ Arm, Status, Reason string } {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("the run wrote no manifest: %v", err)
	}
	var m struct {
		Trials []struct {
			Arm    string `json:"arm"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"trials"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	out := make([]struct{ Arm, Status, Reason string }, len(m.Trials))
	for i, tr := range m.Trials {
		out[i] = struct{ Arm, Status, Reason string }{tr.Arm, tr.Status, tr.Reason}
	}
	return out
}

// Workloads small enough for seconds-long trials: a storm of a few
// queries a second for three seconds (its default mix is mostly
// $setWindowFields, which FerretDB does not implement), and three $merge
// ops (FerretDB implements no $merge).
const (
	spillWorkload = `name: peer-spill
kind: spill_to_disk
spill_to_disk:
  stormRate: 4
  canaryRate: 2
  phases: {warmup: 1s, storm: 3s, recovery: 1s}
  scanDocs: 400
  docBytes: 100
  holdBytes: 65536
  loadBytes: 65536
  batchDocs: 100
  serverSelectionTimeout: 30s
`
	mergeWorkload = `name: peer-merge
kind: merge_partial_write
merge_partial_write:
  ops: 3
  sourceDocs: 150
`
)

// qmlsab attached by URI to a server that is not mongod, as a user would
// attach it (issue 22's acceptance): a spill_to_disk trial and a
// merge_partial_write trial against embedded FerretDB, then the report.
// Each expectation is a subtest of its own so that a failure names the
// behaviour that is missing. Nothing in the arms or workloads names
// FerretDB: the report can only learn what answered from the server. The
// storm also runs with a killOp actor (arm K), whose fields FerretDB's
// hostInfo lacks: that arm is refused or its trial invalid, never a panic.
func TestQmlsabRunAgainstFerretDB(t *testing.T) {
	bin := buildQmlsab(t)
	s := startPeer(t)
	tmp := t.TempDir()
	armsFile := filepath.Join(tmp, "arms.yaml")
	uri := s.URI() + "?directConnection=true&serverSelectionTimeoutMS=30000"
	armsYAML := "arms:\n" +
		"  - name: F\n    description: attached by URI\n    target: uri\n    uri: \"" + uri + "\"\n" +
		"  - name: K\n    description: attached by URI, with a killOp actor\n    target: uri\n    uri: \"" + uri + "\"\n    actors:\n      - killop: {interval: 200ms}\n"
	if err := os.WriteFile(armsFile, []byte(armsYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ name, spec, arms string }{{"spill_to_disk", spillWorkload, "F,K"}, {"merge_partial_write", mergeWorkload, "F"}} {
		t.Run(w.name, func(t *testing.T) {
			wl := filepath.Join(tmp, w.name+".yaml")
			if err := os.WriteFile(wl, []byte(w.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(tmp, w.name)
			start := time.Now()
			out, code := runQmlsab(t, bin, "run", "--arms-file", armsFile, "--arms", w.arms, "--workload", wl, "--n", "1", "--out", dir, "--verbose")
			t.Logf("qmlsab run (%v, exit %d):\n%s", time.Since(start).Round(time.Millisecond), code, out)
			if goPanic.MatchString(out) {
				t.Fatalf("qmlsab run panicked")
			}

			t.Run("provisioning table lists absent sections", func(t *testing.T) {
				// FerretDB's serverStatus has no queryMemory section: the
				// table must say that what rests on it is absent.
				found := false
				for _, line := range strings.Split(out, "\n") {
					l := strings.ToLower(line)
					if strings.Contains(l, "querymemory") && strings.Contains(l, "absent") {
						found = true
					}
				}
				if !found {
					t.Errorf("no output line names queryMemory as absent")
				}
			})
			t.Run("trials invalid naming NotImplemented", func(t *testing.T) {
				sawF := false
				for _, tr := range manifestTrials(t, dir) {
					switch {
					case tr.Status != "invalid":
						t.Errorf("trial %s: status %q, reason %q; want invalid", tr.Arm, tr.Status, tr.Reason)
					case tr.Arm == "F" && !strings.Contains(tr.Reason, "NotImplemented"):
						t.Errorf("trial F: reason %q; want it to name NotImplemented", tr.Reason)
					}
					sawF = sawF || tr.Arm == "F"
				}
				if !sawF {
					t.Errorf("the manifest has no trial of arm F")
				}
			})
			t.Run("run exits non-zero", func(t *testing.T) {
				if code == 0 {
					t.Errorf("qmlsab run exited 0 with no valid trial")
				}
				if code == 2 {
					t.Errorf("qmlsab run exited 2 (a usage error, or the Go runtime's exit after a panic)")
				}
			})

			rep, rcode := runQmlsab(t, bin, "report", dir, "--format", "html,md,json")
			t.Logf("qmlsab report (exit %d):\n%s", rcode, rep)
			if goPanic.MatchString(rep) {
				t.Fatalf("qmlsab report panicked")
			}
			md, mdErr := os.ReadFile(filepath.Join(dir, "summary.md"))
			html, htmlErr := os.ReadFile(filepath.Join(dir, "report.html"))
			t.Run("report renders with – for absent metrics", func(t *testing.T) {
				if rcode != 0 {
					t.Errorf("qmlsab report exited %d", rcode)
				}
				if mdErr != nil || htmlErr != nil {
					t.Fatalf("report files: summary.md: %v; report.html: %v", mdErr, htmlErr)
				}
				// A table cell that is "–" alone: an absent value, not the
				// dash of a "min–max" in the prose.
				dashCell := false
				for _, line := range strings.Split(string(md), "\n") {
					if !strings.HasPrefix(line, "|") {
						continue
					}
					for _, cell := range strings.Split(line, "|") {
						dashCell = dashCell || strings.TrimSpace(cell) == "–"
					}
				}
				if !dashCell {
					t.Errorf("no table cell of summary.md is –; want absent metrics shown as –:\n%s", md)
				}
			})
			t.Run("report header names FerretDB and its version", func(t *testing.T) {
				if mdErr != nil || htmlErr != nil {
					t.Fatalf("report files: summary.md: %v; report.html: %v", mdErr, htmlErr)
				}
				head := string(md)
				if i := strings.Index(head, "\n|"); i > 0 {
					head = head[:i] // the header: what precedes the first table
				}
				for _, want := range []string{"FerretDB", strings.TrimPrefix(Version, "v")} {
					if !strings.Contains(head, want) {
						t.Errorf("summary.md's header does not name %q:\n%s", want, head)
					}
					if !strings.Contains(string(html), want) {
						t.Errorf("report.html does not name %q", want)
					}
				}
			})
		})
	}
}
