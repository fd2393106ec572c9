package history

import "github.com/qmlsab/qmlsab/internal/mongouri"

// RedactURI returns a history location as it may be shown: a URI with its
// password and secret options replaced by "<redacted>" (mongouri.Redact),
// a file path as it is.
func RedactURI(uri string) string { return mongouri.Redact(uri) }

// RedactText removes the secrets of uri from text (mongouri.RedactText).
func RedactText(text, uri string) string { return mongouri.RedactText(text, uri) }

// redactErr removes uri's secrets from err's text; errors.Is still sees
// through it.
func redactErr(err error, uri string) error { return mongouri.RedactError(err, uri) }
