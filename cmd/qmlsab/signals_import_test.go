package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP while import reads its outcomes from a pipe whose writer has
// stalled (`--outcomes <(slow-exporter)`): exit 130, and neither --out nor
// the folder assembled beside it is left. The test is the pipe's writer:
// it opens its end once import has opened the other (a non-blocking open
// succeeds only then), writes one record and holds the pipe open.
func TestImportOnSIGHUPWhileReadingAStalledPipeLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	tmp := t.TempDir()
	dd := filepath.Join(tmp, "diagnostic.data")
	start := writeDiagnosticData(t, dd, 3)
	fifo := filepath.Join(tmp, "outcomes.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "imported")
	p := startQmlsab(t, qmlsabBinary(t), "import", "ftdc", "--arm", "D", "--phases", "1s,1s,1s",
		"--start", start.UTC().Format(time.RFC3339), "--outcomes", fifo, "--out", out, dd)
	var w *os.File
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = f
			break
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			t.Fatalf("import never opened its outcomes pipe: %v\n%s", err, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer w.Close()
	if _, err := w.WriteString(`{"kind":"storm","time":"` + start.UTC().Format(time.RFC3339Nano) + `","latencyMs":3,"outcome":"completed"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	exited := make(chan int, 1)
	go func() { exited <- p.finish(false) }()
	var code int
	select {
	case code = <-exited:
	case <-time.After(30 * time.Second):
		w.Close() // let a blocked import go, to report it
		code = <-exited
		t.Errorf("import did not stop on SIGHUP while its pipe was open (exit %d after the writer closed)", code)
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitInterrupted, p.out.String(), p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "interrupted by SIGHUP") || !strings.Contains(p.stderr.String(), "nothing written to "+out) {
		t.Errorf("the message does not say why it stopped and what became of --out:\n%s", p.stderr.String())
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "imported") {
			t.Errorf("left after the interrupted import: %s", e.Name())
		}
	}
}
