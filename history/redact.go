package history

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// redacted replaces a secret in redacted text.
const redacted = "xxxxx"

// sensitiveOptions are connection-string options whose values are secrets
// (lower case): certificate key passwords, and mechanism properties, which
// may carry an AWS session token.
var sensitiveOptions = map[string]bool{
	"tlscertificatekeyfilepassword":   true,
	"sslclientcertificatekeypassword": true,
	"authmechanismproperties":         true,
}

// RedactURI returns uri with its password, and the values of options that
// hold secrets, replaced by "xxxxx". Text without "://" is returned
// unchanged. The password is found as the driver finds it (user
// information ends at the last '@' before the first '/') and also as if it
// ended at the last '@' before the first '?', and the longer wins: a
// password with an unescaped '@', '/', ':' or '?' is still hidden in full.
func RedactURI(uri string) string {
	start, end, ok := passwordSpan(uri)
	if ok {
		uri = uri[:start] + redacted + uri[end:]
		end = start + len(redacted)
	} else if end = strings.Index(uri, "://"); end < 0 {
		return uri
	}
	q := strings.IndexByte(uri[end:], '?')
	if q < 0 {
		return uri
	}
	head, query := uri[:end+q+1], uri[end+q+1:]
	parts := strings.Split(query, "&")
	for j, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		if hasValue && sensitive(k) {
			parts[j] = k + "=" + redacted
		}
	}
	return head + strings.Join(parts, "&")
}

// passwordSpan locates the password in uri as uri[start:end].
func passwordSpan(uri string) (start, end int, ok bool) {
	i := strings.Index(uri, "://")
	if i < 0 {
		return 0, 0, false
	}
	base, rest := i+3, uri[i+3:]
	lastAtBefore := func(stop byte) int {
		if j := strings.IndexByte(rest, stop); j >= 0 {
			return strings.LastIndexByte(rest[:j], '@')
		}
		return strings.LastIndexByte(rest, '@')
	}
	at := max(lastAtBefore('/'), lastAtBefore('?'))
	if at < 0 {
		return 0, 0, false
	}
	c := strings.IndexByte(rest[:at], ':')
	if c < 0 {
		return 0, 0, false
	}
	return base + c + 1, base + at, true
}

func sensitive(key string) bool {
	if k, err := url.QueryUnescape(key); err == nil {
		key = k
	}
	return sensitiveOptions[strings.ToLower(key)]
}

// uriSecrets lists the secrets in uri as they may appear in error text:
// each escaped as written and unescaped, longest first.
func uriSecrets(uri string) []string {
	var raw []string
	queryFrom := strings.Index(uri, "://")
	if queryFrom < 0 {
		return nil
	}
	if start, end, ok := passwordSpan(uri); ok {
		raw = append(raw, uri[start:end])
		queryFrom = end
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

// redactError is an error whose text had a URI's secrets removed. It does
// not unwrap (so the original text cannot be reached), but errors.Is still
// matches what the original matched, e.g. context.DeadlineExceeded.
type redactError struct {
	msg   string
	cause error
}

func (e *redactError) Error() string        { return e.msg }
func (e *redactError) Is(target error) bool { return errors.Is(e.cause, target) }

// redactErr removes uri's secrets from err's text.
func redactErr(err error, uri string) error {
	if err == nil {
		return nil
	}
	return &redactError{msg: RedactText(err.Error(), uri), cause: err}
}

// RedactText removes the secrets of uri from text: the URI itself is
// replaced by its redacted form, then any remaining occurrence of its
// password or secret option values, escaped or not.
func RedactText(text, uri string) string {
	text = strings.ReplaceAll(text, uri, RedactURI(uri))
	for _, s := range uriSecrets(uri) {
		text = strings.ReplaceAll(text, s, redacted)
	}
	return text
}
