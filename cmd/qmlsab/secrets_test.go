package main

import (
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/mongosim"
)

// A URI's password and TLS secrets never reach results, logs, reports or
// messages, whether the run fails at parse time or against the server.
func TestSecretsNeverReachAnyOutput(t *testing.T) {
	const pw, tlsPW = "Sup3rSecretPw", "Tls5ecretPw"
	rs, err := mongosim.StartReplicaSet(context.Background(), mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	host := rs.Hosts()[0]
	dir := t.TempDir()
	withAuth := filepath.Join(dir, "auth.yaml")
	// mongosim has no authentication, so the driver's SCRAM handshake
	// fails: the run records an invalid trial whose reason must not quote
	// the URI's secret.
	os.WriteFile(withAuth, []byte("arms:\n  - name: U\n    target: uri\n    uri: \"mongodb://bob:"+pw+"@"+host+"/?directConnection=true&connectTimeoutMS=2000&serverSelectionTimeoutMS=2000\"\n"), 0o644)
	withTLS := filepath.Join(dir, "tls.yaml")
	os.WriteFile(withTLS, []byte("arms:\n  - name: T\n    target: uri\n    uri: \"mongodb://bob:"+pw+"@"+host+"/?tls=true&tlsCertificateKeyFile=/nonexistent.pem&tlsCertificateKeyFilePassword="+tlsPW+"&serverSelectionTimeoutMS=2000\"\n"), 0o644)
	var outputs []string
	for _, args := range [][]string{
		{"run", "--verbose", "--arms-file", withAuth, "--arms", "U", "--n", "1", "--profile", "quick", "--out", filepath.Join(dir, "r1")},
		{"report", "--format", "html,json,perf,bench,md", filepath.Join(dir, "r1")},
		{"run", "--verbose", "--arms-file", withTLS, "--arms", "T", "--n", "1", "--profile", "quick", "--out", filepath.Join(dir, "r2")},
		{"arms", "show", "--arms-file", withAuth, "U"},
		{"arms", "list", "--arms-file", withTLS},
		{"run", "--arms-file", withAuth, "--arms", "U", "--n", "1", "--out", filepath.Join(dir, "r3"), "--resume", filepath.Join(dir, "r1")},
	} {
		out, _ := qmlsab(t, args...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+out)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, _ := os.ReadFile(path)
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(strings.NewReader(string(b)))
			if err == nil {
				b, _ = io.ReadAll(zr)
			}
		}
		files++
		outputs = append(outputs, path+"\n"+string(b))
		return nil
	})
	if files < 5 {
		t.Fatalf("only %d files written; the runs did not get far enough to test", files)
	}
	for _, o := range outputs {
		for _, secret := range []string{pw, tlsPW} {
			if strings.Contains(o, secret) {
				t.Errorf("a secret reached an output:\n%.3000s", o)
			}
		}
	}
	if !strings.Contains(strings.Join(outputs, "\n"), "bob:<redacted>@") {
		t.Error("no redacted URI anywhere: the test did not see the URI at all")
	}
}
