package history

import (
	"errors"
	"strings"
	"testing"
)

// A label is stored only in the form every reader can show and match: a
// name of letters, digits, '_', '.' and '-' (no leading '.' or '-', no
// "$set"), a printable value without newlines or tabs, both bounded. Add
// refuses the rest (Validate), so no caller can store what `history list`
// would print across lines.
func TestValidateRefusesLabelsTheHistoryCannotShow(t *testing.T) {
	for _, ok := range []map[string]string{
		{"branch": "master", "ci.job": "nightly", "commit_sha-1": "abc123", "_x": ""},
		{"msg": "fix a,b = c; <b>ünïcödé</b> 日本"},
		{strings.Repeat("k", MaxLabelKeyBytes): strings.Repeat("v", MaxLabelValueBytes)},
	} {
		r := sampleRun("ok", 0, "master", "agg")
		r.Labels = ok
		if err := Validate(r); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for key, value := range map[string]string{
		"":                                      "x",
		"$set":                                  "x",
		"a$b":                                   "x",
		".a":                                    "x",
		"-a":                                    "x",
		"a b":                                   "x",
		"a\nb":                                  "x",
		"ünï":                                   "x",
		strings.Repeat("k", MaxLabelKeyBytes+1): "x",
		"newline":                               "two\nlines",
		"tab":                                   "a\tb",
		"nul":                                   "a\x00b",
		"del":                                   "a\x7fb",
		"bidi":                                  "a\u202eb",
		"lineSeparator":                         "a\u2028b",
		"notUTF8":                               "a\xffb",
		"long":                                  strings.Repeat("v", MaxLabelValueBytes+1),
	} {
		r := sampleRun("bad", 0, "master", "agg")
		r.Labels = map[string]string{"branch": "master", key: value}
		if err := Validate(r); !errors.Is(err, ErrInvalidRun) {
			t.Errorf("label %q=%q: %v, want ErrInvalidRun", key, value, err)
		}
	}
}
