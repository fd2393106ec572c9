package arms

import (
	"net/url"
	"strings"

	"github.com/qmlsab/qmlsab/arms/killop"
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

// RedactURI removes the password from a connection string and masks
// query options that carry secrets (passwords, keys, tokens).
func RedactURI(uri string) string {
	if uri == "" {
		return ""
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return "<unparseable URI redacted>"
	}
	hostPart, query, _ := strings.Cut(rest, "?")
	if at := strings.LastIndex(hostPart, "@"); at >= 0 {
		user, _, _ := strings.Cut(hostPart[:at], ":")
		hostPart = user + ":<redacted>@" + hostPart[at+1:]
	}
	out := scheme + "://" + hostPart
	if query == "" {
		return out
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return out + "?<options redacted>"
	}
	var parts []string
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		lk := strings.ToLower(k)
		if strings.Contains(lk, "password") || strings.Contains(lk, "secret") || strings.Contains(lk, "token") ||
			strings.Contains(lk, "key") && !strings.EqualFold(k, "tlsCertificateKeyFile") {
			parts = append(parts, k+"=<redacted>")
			continue
		}
		if _, ok := vals[k]; ok {
			parts = append(parts, kv)
		}
	}
	return out + "?" + strings.Join(parts, "&")
}
