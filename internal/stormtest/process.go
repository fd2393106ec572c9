package stormtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Launch starts the cmd/mongosim binary bin as a process of its own on a
// free loopback port with args (a replica set's --replSet, say), its log
// in the test's temporary folder, and returns its host:port once it
// listens. The test's cleanup stops it with SIGTERM, as an operator stops
// mongod (SIGKILL after 10 s). A benchmark that measures its own process
// runs the server this way, so the server's CPU is not in its figure.
func Launch(tb testing.TB, bin string, args ...string) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	log, err := os.Create(filepath.Join(tb.TempDir(), fmt.Sprintf("mongosim-%d.log", port)))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind_ip", "127.0.0.1"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		tb.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", host, 200*time.Millisecond); err == nil {
			c.Close()
			return host
		}
		select {
		case <-done:
			tb.Fatalf("%s exited before it listened on %s (log %s)", bin, host, log.Name())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not listen on %s within 60 s (log %s)", bin, host, log.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
