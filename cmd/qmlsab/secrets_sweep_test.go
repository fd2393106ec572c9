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

// Every place a connection string can enter qmlsab — the history flags
// (--history-db and its deprecated --db), the QMLSAB_HISTORY variable, an arms file's uri
// (run, sweep, arms list/show), an import's diagnostic data and outcomes
// (spec file and flags) — given malformed and odd URIs that all carry one
// password: the password reaches no output stream, and no file name or
// file content under the run, history, working and temporary folders. A
// location with a MongoDB scheme is never taken for a path (no SQLite
// file, no "mongodb:" folder). The targets fail fast: the URIs are
// refused as malformed, or reach an in-process mongosim set, which has no
// authentication and so fails the driver's handshake at once.
func TestURISweepLeavesThePasswordNowhere(t *testing.T) {
	const pw = "Qx9UniqueSecretPw"
	const pwEscaped = "Qx9Unique%53ecretPw" // percent-encoded: it decodes to pw
	inputs := t.TempDir()                   // the files that hold the password by design
	work := t.TempDir()
	t.Chdir(work) // a location taken for a relative path would land here
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)

	rs, err := mongosim.StartReplicaSet(context.Background(), mongosim.ReplicaSetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	host := rs.Hosts()[0]
	fast := "serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
	uris := map[string]string{
		"no //":                 "mongodb:bob:" + pw + "@db.example.com",
		"mongodb:/":             "mongodb:/bob:" + pw + "@127.0.0.1:1/",
		"upper case, no //":     "MONGODB:bob:" + pw + "@127.0.0.1:1/hist",
		"srv, no host":          "mongodb+srv://bob:" + pw + "@",
		"srv, no // no host":    "mongodb+srv:bob:" + pw,
		"@ in the password":     "mongodb://bob:x@" + pw + "@127.0.0.1:1/",
		": in the password":     "mongodb://bob:" + pw + ":y@127.0.0.1:1/",
		"IPv6 with a bad port":  "mongodb://user:" + pw + "@[::1]:x/",
		"percent-encoded":       "mongodb://bob:" + pwEscaped + "@" + host + "/hist?directConnection=true&" + fast,
		"authSource, reachable": "mongodb://bob:" + pw + "@" + host + "/hist?authSource=admin&directConnection=true&" + fast,
	}

	night := filepath.Join(work, "results", "night")
	quickRun(t, nightlyWorkload(t, inputs, 150), night, 7)
	histDir := filepath.Join(work, "hist")

	var outputs []string
	refusals := 0
	i := 0
	for name, uri := range uris {
		i++
		armsFile := filepath.Join(inputs, "arms.yaml")
		if err := os.WriteFile(armsFile, []byte("arms:\n  - name: U\n    target: uri\n    uri: \""+uri+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := filepath.Join(inputs, "import.yaml")
		if err := os.WriteFile(spec, []byte("diagnosticData: [\""+uri+"\"]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		specOutcomes := filepath.Join(inputs, "import-outcomes.yaml")
		if err := os.WriteFile(specOutcomes, []byte("outcomes: \""+uri+"\"\ndiagnosticData: [\""+night+"\"]\nphases: {storm: 30s}\ntrials:\n  - {arm: D, start: 2025-06-01T10:00:00Z}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := func(what string) string { return filepath.Join(work, "out", what, string(rune('a'+i))) }
		type call struct {
			args []string
			env  string // QMLSAB_HISTORY, when set
		}
		for _, c := range []call{
			{args: []string{"report", night, "--format", "json", "--history", "--history-db", uri}},
			{args: []string{"report", night, "--format", "json", "--history"}, env: uri},
			{args: []string{"history", "add", "--history-db", uri, night}},
			{args: []string{"history", "add", night}, env: uri},
			{args: []string{"history", "list", "--history-db", uri}},
			{args: []string{"history", "list", "--db", uri}}, // the deprecated spelling
			{args: []string{"history", "list"}, env: uri},
			{args: []string{"history", "detect", "--history-db", uri, "--metric", "availability", "--arms", "D"}},
			{args: []string{"history", "export", "--history-db", uri}},
			{args: []string{"trend", "--history-db", uri, "--out", out("trend") + ".html"}},
			{args: []string{"arms", "list", "--arms-file", armsFile}},
			{args: []string{"arms", "show", "--arms-file", armsFile, "U"}},
			{args: []string{"run", "--verbose", "--arms-file", armsFile, "--arms", "U", "--n", "1", "--profile", "quick", "--out", out("run")}},
			{args: []string{"sweep", "--arms-file", armsFile, "--arms", "U", "--n", "1", "--profile", "quick", "--out", out("sweep")}},
			{args: []string{"import", "ftdc", "--spec", spec, "--out", out("import")}},
			{args: []string{"import", "ftdc", "--spec", specOutcomes, "--out", out("import-outcomes")}},
			{args: []string{"import", "ftdc", "--arm", "D", "--start", "2025-06-01T10:00:00Z", "--phases", "1s,1s,1s", "--out", out("import-flags"), uri}},
			{args: []string{"import", "ftdc", "--arm", "D", "--start", "2025-06-01T10:00:00Z", "--phases", "1s,1s,1s", "--outcomes", uri, "--out", out("import-outcome-flag"), night}},
		} {
			if c.env != "" {
				t.Setenv("QMLSAB_HISTORY", c.env)
			} else {
				t.Setenv("QMLSAB_HISTORY", filepath.Join(histDir, "history.db"))
			}
			text, code := qmlsab(t, c.args...)
			if code == 0 && !strings.HasPrefix(c.args[0], "arms") && !(c.args[0] == "run" && strings.Contains(uri, host)) {
				t.Errorf("%s: qmlsab %s succeeded; want a refusal", name, strings.Join(c.args, " "))
			}
			if code != 0 {
				refusals++
			}
			// The command line itself holds the password: only what qmlsab
			// wrote is checked, labelled by the case's name.
			outputs = append(outputs, name+": qmlsab "+c.args[0]+" "+c.args[1]+" …\n"+text)
		}
	}

	files := 0
	filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		outputs = append(outputs, "file name "+path)
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.HasSuffix(path, ".gz") {
			if zr, err := gzip.NewReader(strings.NewReader(string(b))); err == nil {
				if u, err := io.ReadAll(zr); err == nil {
					b = u
				}
			}
		}
		files++
		outputs = append(outputs, path+"\n"+string(b))
		return nil
	})
	t.Logf("%d URIs, %d refusals, %d files swept", len(uris), refusals, files)
	if files < 10 || refusals < 100 {
		t.Fatalf("%d files written, %d refusals: the sweep did not get far enough to test", files, refusals)
	}
	redactedSeen := false
	for _, o := range outputs {
		for _, secret := range []string{pw, pwEscaped} {
			if strings.Contains(o, secret) {
				t.Errorf("the password reached an output:\n%.3000s", o)
			}
		}
		redactedSeen = redactedSeen || strings.Contains(o, "bob:<redacted>@")
	}
	if !redactedSeen {
		t.Error("no redacted URI anywhere: the sweep did not see the URIs at all")
	}
	for _, p := range []string{"mongodb:", "MONGODB:", "mongodb+srv:"} {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("a %s location was taken for a path: %s exists", p, filepath.Join(work, p))
		}
	}
}
