package mongouri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"mongodb://alice:pw@h1:27017/db", "mongodb://alice:<redacted>@h1:27017/db"},
		{"mongodb://alice:pw@h1:1,h2:2,h3:3/db?replicaSet=rs0", "mongodb://alice:<redacted>@h1:1,h2:2,h3:3/db?replicaSet=rs0"},
		{"mongodb+srv://alice:p%40ss@cluster0.example.net/?retryWrites=true", "mongodb+srv://alice:<redacted>@cluster0.example.net/?retryWrites=true"},
		{"MONGODB://alice:pw@h1/", "MONGODB://alice:<redacted>@h1/"},
		{"mongodb://user:pw@[::1]:x/", "mongodb://user:<redacted>@[::1]:x/"},
		// Malformed passwords (unescaped '@', '/', ':') are hidden in full.
		{"mongodb://alice:p@ss/w:rd@h1/db", "mongodb://alice:<redacted>@h1/db"},
		{"mongodb://alice:p@ss@h1", "mongodb://alice:<redacted>@h1"},
		{"mongodb://alice:@h1/db", "mongodb://alice:<redacted>@h1/db"},
		{"mongodb://alice:p?ss@h1/db?w=1", "mongodb://alice:<redacted>@h1/db?w=1"},
		{"mongodb://alice:p?ss@h1?w=1", "mongodb://alice:<redacted>@h1?w=1"},
		{"mongodb://alice:p@s?s@h1,h2/db?w=1", "mongodb://alice:<redacted>@h1,h2/db?w=1"},
		// A MongoDB scheme without its "//" is still a URI to redact.
		{"mongodb:bob:Hunter2@db.example.com", "mongodb:bob:<redacted>@db.example.com"},
		{"mongodb:/bob:Hunter2@127.0.0.1:1/", "mongodb:/bob:<redacted>@127.0.0.1:1/"},
		{"MongoDB+SRV:bob:Hunter2@c.example.net", "MongoDB+SRV:bob:<redacted>@c.example.net"},
		{"mongodb:bob:p/w@h", "mongodb:bob:<redacted>@h"},
		{"mongodb:/bob:Hunter2/", "mongodb:/<redacted>"}, // no '@': user and host cannot be told apart
		{"mongodb:", "mongodb:"},
		// No password: nothing to hide.
		{"mongodb://alice@h1/db?authMechanism=MONGODB-X509", "mongodb://alice@h1/db?authMechanism=MONGODB-X509"},
		{"mongodb://h1,h2/?replicaSet=rs0", "mongodb://h1,h2/?replicaSet=rs0"},
		{"mongodb://h1/?authSource=admin&tlsCertificateKeyFile=/etc/k.pem", "mongodb://h1/?authSource=admin&tlsCertificateKeyFile=/etc/k.pem"},
		// '@' in the query is not user information.
		{"mongodb://h1/db?appName=ci@nightly", "mongodb://h1/db?appName=ci@nightly"},
		{"mongodb://h1:27017/db?appName=ci@nightly", "mongodb://h1:27017/db?appName=ci@nightly"},
		{"mongodb://a:b@h1/db?appName=ci@nightly", "mongodb://a:<redacted>@h1/db?appName=ci@nightly"},
		// Secret options, whatever their case or escaping.
		{"mongodb://h1/?authMechanismProperties=AWS_SESSION_TOKEN:tok&w=1", "mongodb://h1/?authMechanismProperties=<redacted>&w=1"},
		{"mongodb://h1/?tlsCertificateKeyFilePassword=pw", "mongodb://h1/?tlsCertificateKeyFilePassword=<redacted>"},
		{"mongodb://h1/?SSLCLIENTCERTIFICATEKEYPASSWORD=pw", "mongodb://h1/?SSLCLIENTCERTIFICATEKEYPASSWORD=<redacted>"},
		{"mongodb://h1/?tlsCertificateKeyFile%50assword=pw", "mongodb://h1/?tlsCertificateKeyFile%50assword=<redacted>"},
		{"mongodb://h1/?awsSecret=x&apiToken=y", "mongodb://h1/?awsSecret=<redacted>&apiToken=<redacted>"},
		// Not URIs.
		{"results/history.db", "results/history.db"},
		{"mongodb.db", "mongodb.db"},
		{"", ""},
	}
	for _, c := range cases {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
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
	if !strings.Contains(got, "mongodb://alice:<redacted>@h1/db?authMechanismProperties=<redacted>") {
		t.Fatalf("%q lost the redacted URI", got)
	}
	err := RedactError(fmt.Errorf("op on %s: %w", uri, context.DeadlineExceeded), uri)
	if strings.Contains(err.Error(), "w0rd") || !errors.Is(err, context.DeadlineExceeded) || errors.Unwrap(err) != nil {
		t.Fatalf("RedactError = %q (Is %v, Unwrap %v)", err, errors.Is(err, context.DeadlineExceeded), errors.Unwrap(err))
	}
}

// Text with a MongoDB scheme is parsed or refused, and no refusal holds
// the password in any form.
func TestParseRefusesMalformedWithoutThePassword(t *testing.T) {
	const pw = "Zq7SecretPw"
	for _, c := range []struct{ uri, want string }{
		{"mongodb:bob:" + pw + "@db.example.com", "the // after mongodb: is missing"},
		{"mongodb:/bob:" + pw + "@127.0.0.1:1/", "the // after mongodb: is missing"},
		{"MONGODB+SRV:bob:" + pw + "@c.example.net", "the // after MONGODB+SRV: is missing (want mongodb+srv://"},
		{"mongodb+srv://bob:" + pw + "@", "no host"},
		{"mongodb+srv://", "no host"},
		{"mongodb://bob:" + pw + "@/db", "no host"},
		{"mongodb://bob:" + pw + "@[::1:27017/", "missing ']'"},
		{"mongodb://bob:" + pw + "@[::1]:x/", ""},
		{"mongodb://bob:" + pw + "%zz@h1/", ""},
		{"mongodb://bob:" + pw + "@h1/?authSource=admin&connectTimeoutMS=soon", "connectTimeoutMS"},
		{"mongodb://bob@h1/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:" + pw + "&w=x", ""},
		{"http://bob:" + pw + "@h1/", "not a MongoDB connection string"},
	} {
		_, err := Parse(c.uri)
		if err == nil {
			t.Errorf("Parse(%q) accepted it", c.uri)
			continue
		}
		if strings.Contains(err.Error(), pw) || (strings.Contains(c.uri, pw) && !strings.Contains(err.Error(), Redacted)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v; want the password redacted and …%s…", c.uri, err, c.want)
		}
	}
	cs, err := Parse("mongodb://bob:p%40ss@127.0.0.1:1/hist?authSource=admin")
	if err != nil || cs.Database != "hist" || cs.Password != "p@ss" {
		t.Fatalf("a good URI: %+v, %v", cs, err)
	}
	for _, s := range []string{"mongodb:", "MongoDB:x", "mongodb+srv:", "MONGODB+SRV://h"} {
		if !HasScheme(s) {
			t.Errorf("HasScheme(%q) = false", s)
		}
	}
	for _, s := range []string{"mongodb", "mongodb.db", "results/mongodb:x", "mongo://h", ""} {
		if HasScheme(s) {
			t.Errorf("HasScheme(%q) = true", s)
		}
	}
}

func TestHosts(t *testing.T) {
	for _, c := range []struct {
		uri  string
		want []string
	}{
		{"mongodb://127.0.0.1:1", []string{"127.0.0.1:1"}},
		{"mongodb://localhost:2,[::1]:3/?replicaSet=x", []string{"localhost:2", "[::1]:3"}},
		{"mongodb://u:p@ss@db.example.com:27017/admin", []string{"db.example.com:27017"}},
		{"MongoDB+SRV://u:pw@cluster0.example.net/?tls=true", []string{"cluster0.example.net"}},
	} {
		got, err := Hosts(c.uri)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Hosts(%s) = %q, %v; want %q", Redact(c.uri), got, err, c.want)
		}
	}
	for _, uri := range []string{"http://x", "mongodb:/x", "mongodb://u:hunter2@/db", "mongodb://a,,b", "mongodb://u:hunter2@h%zz"} {
		_, err := Hosts(uri)
		if err == nil {
			t.Errorf("Hosts(%s): no error", Redact(uri))
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Hosts error leaks the password: %v", err)
		}
	}
}

// An '@' in the database name is not the user information's end: the
// redacted form must still read back (the arms fuzz target found
// "mongodb://bobApw@127.0.0.1:27017/@0" redacted to "…<redacted>@0").
func TestAnAtInTheDatabaseNameIsTheDatabases(t *testing.T) {
	uri := "mongodb://bob:pw@127.0.0.1:27017/@0"
	got := Redact(uri)
	if got != "mongodb://bob:<redacted>@127.0.0.1:27017/@0" {
		t.Fatalf("Redact(%q) = %q", uri, got)
	}
}
