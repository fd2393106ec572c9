package history

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedactURI(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mongodb://alice:pw@h1:27017/db", "mongodb://alice:xxxxx@h1:27017/db"},
		{"mongodb://alice:pw@h1:1,h2:2,h3:3/db?replicaSet=rs0", "mongodb://alice:xxxxx@h1:1,h2:2,h3:3/db?replicaSet=rs0"},
		{"mongodb+srv://alice:p%40ss@cluster0.example.net/?retryWrites=true", "mongodb+srv://alice:xxxxx@cluster0.example.net/?retryWrites=true"},
		// Malformed passwords (unescaped '@', '/', ':') are hidden in full.
		{"mongodb://alice:p@ss/w:rd@h1/db", "mongodb://alice:xxxxx@h1/db"},
		{"mongodb://alice:p@ss@h1", "mongodb://alice:xxxxx@h1"},
		{"mongodb://alice:@h1/db", "mongodb://alice:xxxxx@h1/db"},
		{"mongodb://alice:p?ss@h1/db?w=1", "mongodb://alice:xxxxx@h1/db?w=1"},
		{"mongodb://alice:p?ss@h1?w=1", "mongodb://alice:xxxxx@h1?w=1"},
		{"mongodb://alice:p@s?s@h1,h2/db?w=1", "mongodb://alice:xxxxx@h1,h2/db?w=1"},
		// No password: nothing to hide.
		{"mongodb://alice@h1/db?authMechanism=MONGODB-X509", "mongodb://alice@h1/db?authMechanism=MONGODB-X509"},
		{"mongodb://h1,h2/?replicaSet=rs0", "mongodb://h1,h2/?replicaSet=rs0"},
		// '@' in the query is not user information.
		{"mongodb://h1/db?appName=ci@nightly", "mongodb://h1/db?appName=ci@nightly"},
		{"mongodb://h1:27017/db?appName=ci@nightly", "mongodb://h1:27017/db?appName=ci@nightly"},
		{"mongodb://a:b@h1/db?appName=ci@nightly", "mongodb://a:xxxxx@h1/db?appName=ci@nightly"},
		// Secret options, whatever their case or escaping.
		{"mongodb://h1/?authMechanismProperties=AWS_SESSION_TOKEN:tok&w=1", "mongodb://h1/?authMechanismProperties=xxxxx&w=1"},
		{"mongodb://h1/?tlsCertificateKeyFilePassword=pw", "mongodb://h1/?tlsCertificateKeyFilePassword=xxxxx"},
		{"mongodb://h1/?SSLCLIENTCERTIFICATEKEYPASSWORD=pw", "mongodb://h1/?SSLCLIENTCERTIFICATEKEYPASSWORD=xxxxx"},
		{"mongodb://h1/?tlsCertificateKeyFile%50assword=pw", "mongodb://h1/?tlsCertificateKeyFile%50assword=xxxxx"},
		// Not URIs.
		{"results/history.db", "results/history.db"},
		{"", ""},
	}
	for _, c := range cases {
		if got := RedactURI(c.in); got != c.want {
			t.Errorf("RedactURI(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	uri := "mongodb://alice:p%40ss%2Fw0rd@h1/db?authMechanismProperties=AWS_SESSION_TOKEN:tok%2Bx"
	text := fmt.Sprintf("connecting to %s failed; password p@ss/w0rd (escaped p%%40ss%%2Fw0rd), token AWS_SESSION_TOKEN:tok+x", uri)
	got := RedactText(text, uri)
	for _, secret := range []string{"p@ss/w0rd", "p%40ss%2Fw0rd", "tok+x", "tok%2Bx"} {
		if strings.Contains(got, secret) {
			t.Fatalf("%q still contains %q", got, secret)
		}
	}
	if !strings.Contains(got, "mongodb://alice:xxxxx@h1/db?authMechanismProperties=xxxxx") {
		t.Fatalf("%q lost the redacted URI", got)
	}
	err := redactErr(fmt.Errorf("op on %s: %w", uri, errSentinel), uri)
	if strings.Contains(err.Error(), "w0rd") || !errors.Is(err, errSentinel) || errors.Unwrap(err) != nil {
		t.Fatalf("redactErr = %q (Is %v, Unwrap %v)", err, errors.Is(err, errSentinel), errors.Unwrap(err))
	}
}

var errSentinel = errors.New("sentinel")
