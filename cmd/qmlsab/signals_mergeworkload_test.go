package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/qmlsab/qmlsab/store"
	"github.com/qmlsab/qmlsab/workload"
)

// memberOf is the member mongosim's start-up log line names ("" for any
// other line).
func memberOf(line string) string {
	_, rest, ok := strings.Cut(line, `msg="waiting for connections" member=`)
	if !ok {
		return ""
	}
	member, _, _ := strings.Cut(rest, " ")
	return member
}

// mergeOpRunning reports whether one of members runs the merge
// workload's aggregate.
func mergeOpRunning(ctx context.Context, members []string) bool {
	for _, h := range members {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(5 * time.Second))
		if err != nil {
			continue
		}
		res, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1},
			{Key: "appName", Value: workload.DefaultMergePartialWrite().AppName}, {Key: "command.aggregate", Value: "merge_source"}}).Raw()
		_ = c.Disconnect(context.Background())
		if err != nil {
			continue
		}
		if ops, _ := res.Lookup("inprog").Array().Values(); len(ops) > 0 {
			return true
		}
	}
	return false
}

// SIGINT or SIGTERM while a merge_partial_write op runs, at the largest
// source its budget accepts, stops the run promptly: the trial is marked
// interrupted and the embedded members shut down, their aggregate
// interrupted. Before, the op's window ran for hours, no stage checked
// for an interrupt, and the members' shutdown waited for it: qmlsab was
// still running ten minutes after the signal.
func TestMergeWorkloadStopsOnSignalMidOp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs merge trials of ~190,000 documents")
	}
	bin := buildQmlsab(t)
	wl := filepath.Join(t.TempDir(), "largest.yaml")
	if err := os.WriteFile(wl, []byte(fmt.Sprintf("name: largest\nkind: merge_partial_write\nmerge_partial_write:\n  ops: 1\n  sourceDocs: %d\n",
		workload.LargestMergeSource(1))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := filepath.Join(t.TempDir(), "run")
		// Arm A sheds nothing: the op reads and writes its whole source.
		cmd := exec.Command(bin, "run", "--workload", wl, "--arms", "A", "--n", "1", "--verbose", "--out", dir)
		stderr, _ := cmd.StderrPipe()
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var members []string
		var logs strings.Builder
		go func() {
			sc := bufio.NewScanner(stderr)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				mu.Lock()
				logs.WriteString(sc.Text() + "\n")
				if m := memberOf(sc.Text()); m != "" {
					members = append(members, m)
				}
				mu.Unlock()
			}
		}()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		var sent time.Time
		for sent.IsZero() && ctx.Err() == nil {
			mu.Lock()
			hosts := append([]string(nil), members...)
			mu.Unlock()
			if mergeOpRunning(ctx, hosts) {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				sent = time.Now()
				break
			}
			select {
			case err := <-exited:
				cancel()
				t.Fatalf("%v: the run ended (%v) before its op was seen running:\n%s", sig, err, out.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
		if sent.IsZero() {
			_ = cmd.Process.Kill()
			t.Fatalf("%v: the merge op never showed in currentOp", sig)
		}
		// Generous for a busy machine: the members stop at their next
		// interrupt check, a fraction of a second.
		var err error
		select {
		case err = <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("%v: still running 2 minutes after the signal", sig)
		}
		mu.Lock()
		log := logs.String()
		mu.Unlock()
		if err == nil || !strings.Contains(log+out.String(), "qmlsab run --resume "+dir) {
			t.Errorf("%v: exit %v; want a non-zero exit naming the resume command:\n%s%s", sig, err, out.String(), log)
		}
		r, oerr := store.Open(dir)
		if oerr != nil {
			t.Fatal(oerr)
		}
		if len(r.Manifest.Trials) != 1 || r.Manifest.Trials[0].Status != store.Interrupted {
			t.Errorf("%v: trials %+v, want the one interrupted", sig, r.Manifest.Trials)
		}
		t.Logf("%v: stopped %v after the signal; peak resident memory %d MiB", sig, time.Since(sent).Round(time.Millisecond),
			cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss>>10)
	}
}
