// Package mongouri recognises MongoDB connection strings wherever qmlsab
// takes one (history locations, uri arms) and keeps their secrets out of
// every message: text that starts with a MongoDB scheme is parsed as a
// connection string or refused, never taken for something else such as a
// file path, and the refusal, like every other message about a URI, shows
// it with its password and secret options replaced by [Redacted].
package mongouri

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
)

// Redacted replaces a secret in redacted text. Its angle brackets cannot
// occur in a URI, so it is never mistaken for a real password.
const Redacted = "<redacted>"

// schemes are the MongoDB schemes, lower case, with their colon.
var schemes = []string{"mongodb:", "mongodb+srv:"}

// HasScheme reports whether s starts with "mongodb:" or "mongodb+srv:" in
// any case, with or without the "//" that must follow: such text is meant
// as a connection string and is to be parsed as one or refused.
func HasScheme(s string) bool {
	_, ok := schemeLen(s)
	return ok
}

func schemeLen(s string) (int, bool) {
	for _, sc := range schemes {
		if len(s) >= len(sc) && strings.EqualFold(s[:len(sc)], sc) {
			return len(sc), true
		}
	}
	return 0, false
}

// Parse parses and validates a MongoDB connection string as the driver
// will use it. A string with a MongoDB scheme but no "//" after it
// (mongodb:user:pw@host, mongodb:/host) is refused rather than guessed at.
// The error shows the URI redacted, then what is wrong, and never holds
// the password or a secret option, escaped or not.
func Parse(uri string) (*connstring.ConnString, error) {
	n, ok := schemeLen(uri)
	if !ok {
		return nil, fmt.Errorf("%s: not a MongoDB connection string (want mongodb://[user:password@]host[:port][/database][?options] or mongodb+srv://)", Redact(uri))
	}
	if !strings.HasPrefix(uri[n:], "//") {
		return nil, fmt.Errorf("%s: malformed MongoDB connection string: the // after %s is missing (want %s//[user:password@]host[:port][/database][?options])",
			Redact(uri), uri[:n], strings.ToLower(uri[:n]))
	}
	if hosts(uri, n+2) == "" {
		// Refused here: the driver would first look up an empty SRV name.
		return nil, fmt.Errorf("%s: malformed MongoDB connection string: no host", Redact(uri))
	}
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Redact(uri), RedactError(err, uri))
	}
	return cs, nil
}

// Hosts is the host list of a MongoDB connection string, each entry as
// written (host, host:port or [v6]:port; for mongodb+srv the SRV name),
// read the way Parse reads it: after the user information's last '@'
// (a password may hold an unescaped '@'), up to the path or the options.
// It does not validate options, so a caller can check the hosts (the
// loopback rule) before the driver is involved. Errors show the URI
// redacted.
func Hosts(uri string) ([]string, error) {
	n, ok := schemeLen(uri)
	if !ok || !strings.HasPrefix(uri[n:], "//") {
		return nil, fmt.Errorf("%s: not a MongoDB connection string (want mongodb://[user:password@]host[:port][/database][?options] or mongodb+srv://)", Redact(uri))
	}
	list := hosts(uri, n+2)
	if list == "" {
		return nil, fmt.Errorf("%s: malformed MongoDB connection string: no host", Redact(uri))
	}
	out := strings.Split(list, ",")
	for _, h := range out {
		if h == "" {
			return nil, fmt.Errorf("%s: malformed MongoDB connection string: an empty host in the host list", Redact(uri))
		}
		if _, err := url.Parse("mongodb://" + h); err != nil {
			return nil, fmt.Errorf("%s: bad host %q in the connection string", Redact(uri), h)
		}
	}
	return out, nil
}

// sensitiveOptions are connection-string options whose values are secrets
// (lower case) although their names do not say so: mechanism properties
// may carry an AWS session token.
var sensitiveOptions = map[string]bool{
	"authmechanismproperties": true,
}

// sensitive reports whether the option named key (escaped or not, any
// case) holds a secret: a password, key, token or secret. The path of a
// certificate key file is not one.
func sensitive(key string) bool {
	if k, err := url.QueryUnescape(key); err == nil {
		key = k
	}
	k := strings.ToLower(key)
	switch {
	case sensitiveOptions[k]:
		return true
	case k == "tlscertificatekeyfile":
		return false
	}
	for _, word := range []string{"password", "secret", "token", "key"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return false
}

// authority finds where the user information and hosts of uri begin:
// after "scheme://", or, in a string with a MongoDB scheme but without the
// "//", after the scheme's colon and any slashes (malformed is then true).
// Text with neither is not a URI.
func authority(uri string) (start int, malformed, ok bool) {
	if n, isMongo := schemeLen(uri); isMongo {
		if strings.HasPrefix(uri[n:], "//") {
			return n + 2, false, true
		}
		for n < len(uri) && uri[n] == '/' {
			n++
		}
		return n, true, true
	}
	if i := strings.Index(uri, "://"); i >= 0 {
		return i + 3, false, true
	}
	return 0, false, false
}

// passwordSpan locates the password in uri, whose authority starts at
// base, as uri[start:end].
func passwordSpan(uri string, base int) (start, end int, ok bool) {
	rest := uri[base:]
	at := userInfoEnd(rest)
	if at < 0 {
		return 0, 0, false
	}
	c := strings.IndexByte(rest[:at], ':')
	if c < 0 {
		return 0, 0, false
	}
	return base + c + 1, base + at, true
}

// hosts is the host list of a URI whose authority starts at base: what
// follows the user information, up to the path or the options.
func hosts(uri string, base int) string {
	rest := uri[base:]
	if at := userInfoEnd(rest); at >= 0 {
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// userInfoEnd is the index in rest (a URI from its authority on) of the
// '@' that ends the user information, or -1. It is the last '@' before the
// first '/' (as the driver reads it) or the last '@' before the first '?',
// whichever is later, so a password with an unescaped '@', '/' or ':' is
// covered whole — except that without options an '@' after the first '/'
// with no '/' after it is in the database name ("u@host/@db"), when an
// '@' before the first '/' ends the user information.
func userInfoEnd(rest string) int {
	slash := strings.IndexByte(rest, '/')
	bySlash := strings.LastIndexByte(rest, '@')
	if slash >= 0 {
		bySlash = strings.LastIndexByte(rest[:slash], '@')
	}
	q := strings.IndexByte(rest, '?')
	if q >= 0 {
		return max(bySlash, strings.LastIndexByte(rest[:q], '@'))
	}
	last := strings.LastIndexByte(rest, '@')
	if bySlash >= 0 && last > slash && !strings.Contains(rest[last:], "/") {
		return bySlash
	}
	return max(bySlash, last)
}

// Redact returns uri with its password, and the values of options that
// hold secrets, replaced by [Redacted]. A malformed MongoDB string whose
// user information cannot be told from its hosts (no '@') keeps only its
// scheme. Text that is not a URI at all (a file path) is returned as it is.
func Redact(uri string) string {
	base, malformed, ok := authority(uri)
	if !ok {
		return uri
	}
	end := base
	if start, e, found := passwordSpan(uri, base); found {
		uri = uri[:start] + Redacted + uri[e:]
		end = start + len(Redacted)
	} else if malformed && !strings.Contains(uri[base:], "@") && uri[base:] != "" {
		return uri[:base] + Redacted
	}
	q := strings.IndexByte(uri[end:], '?')
	if q < 0 {
		return uri
	}
	head, query := uri[:end+q+1], uri[end+q+1:]
	parts := strings.Split(query, "&")
	for j, p := range parts {
		if k, _, hasValue := strings.Cut(p, "="); hasValue && sensitive(k) {
			parts[j] = k + "=" + Redacted
		}
	}
	return head + strings.Join(parts, "&")
}

// secrets lists the secrets in uri as they may appear in error text: each
// as written, path-unescaped and query-unescaped, longest first.
func secrets(uri string) []string {
	base, malformed, ok := authority(uri)
	if !ok {
		return nil
	}
	var raw []string
	queryFrom := base
	if start, end, found := passwordSpan(uri, base); found {
		raw = append(raw, uri[start:end])
		queryFrom = end
	} else if malformed && !strings.Contains(uri[base:], "@") {
		raw = append(raw, uri[base:])
	}
	if q := strings.IndexByte(uri[queryFrom:], '?'); q >= 0 {
		for _, p := range strings.Split(uri[queryFrom+q+1:], "&") {
			if k, v, ok := strings.Cut(p, "="); ok && sensitive(k) {
				raw = append(raw, v)
			}
		}
	}
	var out []string
	for _, s := range raw {
		out = append(out, s)
		if u, err := url.PathUnescape(s); err == nil {
			out = append(out, u)
		}
		if u, err := url.QueryUnescape(s); err == nil {
			out = append(out, u)
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return slices.Compact(out)
}

// RedactText removes the secrets of uri from text: the URI itself is
// replaced by its redacted form, then any remaining occurrence of its
// password or secret option values, escaped or not.
func RedactText(text, uri string) string {
	if uri == "" {
		return text
	}
	text = strings.ReplaceAll(text, uri, Redact(uri))
	for _, s := range secrets(uri) {
		text = strings.ReplaceAll(text, s, Redacted)
	}
	return text
}

// redactedError is an error whose text had a URI's secrets removed. It
// does not unwrap (so the original text cannot be reached), but errors.Is
// still matches what the original matched, e.g. context.DeadlineExceeded.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.cause, target) }

// RedactError removes uri's secrets from err's text (nil stays nil).
func RedactError(err error, uri string) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: RedactText(err.Error(), uri), cause: err}
}
