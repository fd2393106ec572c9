package arms

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/internal/yamlfile"
)

func TestParseValidFile(t *testing.T) {
	src := `arms:
  - name: D
    description: base build + killOp actor
    build: 472d159296b6
    target: embedded
    setParameters: {executionControlDeprioritizationGate: true, internalQueryMaxBlockingSortMemoryUsageBytes: 33554432}
    actors:
      - killop: {rssHighPercent: 70, interval: 100ms, appName: qmlsab-storm}
  - name: R
    target: local
    mongod: /opt/mongodb/bin/mongod
  - name: U
    target: uri
    uri: mongodb://alice:s3cret@db1:27017,db2:27017/?replicaSet=rs0&tls=true&tlsCertificateKeyFilePassword=hunter2
    actors:
      - exec: {command: [mongotune, --mode, kill], env: {LEVEL: "2"}}
`
	list, err := Parse("arms.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("%d arms", len(list))
	}
	d := list[0]
	if d.SetParameters["executionControlDeprioritizationGate"] != "true" || d.SetParameters["internalQueryMaxBlockingSortMemoryUsageBytes"] != "33554432" {
		t.Errorf("setParameters: %v", d.SetParameters)
	}
	if k := d.KillOp(); k == nil || k.RSSHighPercent != 70 || k.Interval != 100*time.Millisecond || k.AppName != "qmlsab-storm" {
		t.Errorf("killop actor: %+v", k)
	}
	if list[2].Actors[0].Exec == nil || list[2].Actors[0].Exec.Command[0] != "mongotune" {
		t.Errorf("exec actor: %+v", list[2].Actors)
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
		msg       string
	}{
		{"unknown key", "arms:\n  - name: A\n    bulid: x\n", 3, `unknown key "bulid"`},
		{"wrong type", "arms:\n  - name: A\n    setParameters: [1, 2]\n", 3, "setParameters: want a mapping"},
		{"wrong type in actor", "arms:\n  - name: D\n    actors:\n      - killop: {rssHighPercent: lots}\n", 4, "rssHighPercent: want a number"},
		{"local without mongod", "arms:\n  - name: L\n    target: local\n", 2, "target local needs 'mongod'"},
		{"uri without uri", "arms:\n  - name: U\n    target: uri\n", 2, "target uri needs 'uri'"},
		{"unknown target", "arms:\n  - name: T\n    target: cloud\n", 3, `"cloud" is not one of`},
		{"duplicate name", "arms:\n  - name: A\n  - name: B\n  - name: A\n", 4, `duplicate arm name "A" (first defined at line 2)`},
		{"unknown actor", "arms:\n  - name: A\n    actors:\n      - chaosmonkey: {}\n", 4, `unknown actor type "chaosmonkey"`},
		{"no name", "arms:\n  - build: x\n", 2, "arm without a name"},
		{"bad YAML", "arms:\n\t- name: A\n", 2, "cannot start any token"},
		{"not a mapping", "- A\n- B\n", 1, "want a mapping"},
		// yaml.v3 would read the first document and drop the second.
		{"two documents", "arms:\n  - name: A\n---\narms:\n  - name: B\n", 3, "a second YAML document"},
		// strconv reads NaN and Inf, which no range check of < and > refuses.
		{"NaN percent", "arms:\n  - name: D\n    actors:\n      - killop: {rssHighPercent: NaN}\n", 4, "rssHighPercent: want a number in (0, 100]"},
		{"Inf percent", "arms:\n  - name: D\n    actors:\n      - killop: {rssHighPercent: +Inf}\n", 4, "rssHighPercent: want a number in (0, 100]"},
		{"-Inf percent", "arms:\n  - name: D\n    actors:\n      - killop: {rssHighPercent: -Infinity}\n", 4, "rssHighPercent: want a number in (0, 100]"},
		{"percent above 100", "arms:\n  - name: D\n    actors:\n      - killop: {rssHighPercent: 100.5}\n", 4, "rssHighPercent: want a number in (0, 100]"},
	} {
		_, err := Parse("my-arms.yaml", []byte(tc.src))
		var e *yamlfile.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %v, want *Error", tc.name, err)
			continue
		}
		if e.File != "my-arms.yaml" || e.Line != tc.line || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%s: got %q, want my-arms.yaml:%d: ...%s...", tc.name, err, tc.line, tc.msg)
		}
		if !strings.HasPrefix(err.Error(), "my-arms.yaml:") {
			t.Errorf("%s: %q does not start with the file name", tc.name, err)
		}
	}
}

func TestBuiltinsRoundTripThroughYAML(t *testing.T) {
	b := Builtin()
	if len(b) != 6 {
		t.Fatalf("%d built-in arms, want A D E M F G", len(b))
	}
	out, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("builtin.yaml", out)
	if err != nil {
		t.Fatalf("parsing our own output: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(b, back) {
		t.Fatalf("round trip changed the arms:\n%s", out)
	}
	if f, _ := Lookup("F"); f.SetParameters["queryMemoryLoadSheddingSweepQueuedOps"] != "true" || f.SetParameters["queryMemoryLoadSheddingLowMarkPercent"] != "30" {
		t.Errorf("F: %v", f.SetParameters)
	}
	if g, _ := Lookup("G"); g.SetParameters["queryMemoryLoadSheddingWriteStartedLatch"] != "true" {
		t.Errorf("G: %v", g.SetParameters)
	}
	if d, _ := Lookup("D"); d.KillOp() == nil || d.SetParameters["queryMemoryLoadSheddingLowMarkPercent"] != "" {
		t.Errorf("D must have the killOp actor and no in-server shedding: %+v", d)
	}
}

func TestCredentialsAreRedacted(t *testing.T) {
	uri := "mongodb://alice:s3cret@db1:27017,db2:27017/admin?replicaSet=rs0&tls=true&tlsCertificateKeyFilePassword=hunter2&authSource=admin"
	got := RedactURI(uri)
	for _, secret := range []string{"s3cret", "hunter2"} {
		if strings.Contains(got, secret) {
			t.Fatalf("redacted URI %q still contains %q", got, secret)
		}
	}
	if !strings.Contains(got, "alice:<redacted>@db1:27017,db2:27017/admin") || !strings.Contains(got, "replicaSet=rs0") {
		t.Fatalf("redaction lost what is not secret: %q", got)
	}
	out, _ := Marshal([]Arm{{Name: "U", Target: TargetURI, URI: uri, SetParameters: map[string]string{}}})
	if strings.Contains(string(out), "s3cret") || strings.Contains(string(out), "hunter2") {
		t.Fatalf("Marshal wrote a secret:\n%s", out)
	}
}

func TestSelectFromFileAndBuiltins(t *testing.T) {
	file := []Arm{{Name: "D", Build: "mine", Target: TargetEmbedded}}
	got, err := Select([]string{"D", "E"}, file)
	if err != nil || len(got) != 2 || got[0].Build != "mine" || got[1].Name != "E" {
		t.Fatalf("Select: %+v %v", got, err)
	}
	if _, err := Select([]string{"Z"}, file); err == nil || !strings.Contains(err.Error(), `unknown arm "Z"`) {
		t.Fatalf("unknown arm: %v", err)
	}
	// One arm named twice would share one trial folder and be reported
	// as one arm with its trials counted twice.
	if _, err := Select([]string{"D", " D"}, file); err == nil || !strings.Contains(err.Error(), `arm "D" is named twice`) {
		t.Fatalf("arm named twice: %v", err)
	}
}
