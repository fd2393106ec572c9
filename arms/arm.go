package arms

import (
	"strings"

	"github.com/qmlsab/qmlsab/arms/killop"
	"github.com/qmlsab/qmlsab/internal/mongouri"
)

// Target kinds: how an arm's deployment comes to exist.
const (
	TargetEmbedded = "embedded" // an in-process mongosim replica set
	TargetLocal    = "local"    // a replica set launched from a mongod binary
	TargetURI      = "uri"      // an existing deployment, attached to
)

// Arm is one configuration under test.
type Arm struct {
	Name          string
	Description   string
	Build         string
	Target        string
	Mongod        string // for TargetLocal
	URI           string // for TargetURI
	SetParameters map[string]string
	Actors        []Actor
}

// Actor is a client-side actor running beside the workload; exactly one
// field is set.
type Actor struct {
	KillOp *killop.Config
	Exec   *ExecActor
}

// ExecActor starts an external program (a real mongotune, say) with the
// deployment's URI in its environment (QMLSAB_URI) and stops it at the end.
type ExecActor struct {
	Command []string
	Env     map[string]string
}

// Embedded reports whether the arm runs on an in-process mongosim set (the
// default target).
func (a Arm) Embedded() bool { return a.Target == TargetEmbedded || a.Target == "" }

// KillOp returns the arm's killOp actor, if it has one.
func (a Arm) KillOp() *killop.Config {
	for _, act := range a.Actors {
		if act.KillOp != nil {
			return act.KillOp
		}
	}
	return nil
}

// Redacted returns the arm with credentials removed from its URI, as it
// may be printed or stored.
func (a Arm) Redacted() Arm {
	a.URI = RedactURI(a.URI)
	return a
}

// RedactURI returns an arm's connection string as it may be printed or
// stored: its password and secret options replaced by "<redacted>"
// (mongouri.Redact). An arm's uri is always meant as a URI, so text that
// is not one at all is hidden whole.
func RedactURI(uri string) string {
	if uri == "" {
		return ""
	}
	if !mongouri.HasScheme(uri) && !strings.Contains(uri, "://") {
		return "<unparseable URI redacted>"
	}
	return mongouri.Redact(uri)
}
