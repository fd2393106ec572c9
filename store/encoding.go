package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// How the records are encoded: the v2 format, snake_case keys and
// durations as seconds (Seconds). The v1 format before it (Go field names,
// camelCase keys, nanoseconds), written for two days, is no longer read:
// a v1 manifest or trial.json is refused, saying what to do (v1Note).
//
// A trial's JSON-lines files carry no schema of their own: the trial.json
// beside them says which format the folder was written in.

// A record with a latency writes it as seconds (latency_s). Each one's
// wire form is the record itself (a type without its methods, so that
// encoding it does not come back here) beside a Seconds view of its
// Latency, which stands in for the record's own latency_s at a shallower
// depth; one form serves both directions.

func (o *StormOp) wire() any {
	type plain StormOp
	return &struct {
		*plain
		Latency *Seconds `json:"latency_s"`
	}{(*plain)(o), (*Seconds)(&o.Latency)}
}

func (o *CanaryOp) wire() any {
	type plain CanaryOp
	return &struct {
		*plain
		Latency *Seconds `json:"latency_s"`
	}{(*plain)(o), (*Seconds)(&o.Latency)}
}

func (o *MergeOp) wire() any {
	type plain MergeOp
	return &struct {
		*plain
		Latency *Seconds `json:"latency_s"`
	}{(*plain)(o), (*Seconds)(&o.Latency)}
}

// MarshalJSON writes the op with its latency as seconds.
func (o StormOp) MarshalJSON() ([]byte, error) { return json.Marshal(o.wire()) }

// UnmarshalJSON reads an op written by MarshalJSON.
func (o *StormOp) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, o.wire()) }

// MarshalJSON writes the canary with its latency as seconds.
func (o CanaryOp) MarshalJSON() ([]byte, error) { return json.Marshal(o.wire()) }

// UnmarshalJSON reads a canary written by MarshalJSON.
func (o *CanaryOp) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, o.wire()) }

// MarshalJSON writes the $merge op with its latency as seconds.
func (o MergeOp) MarshalJSON() ([]byte, error) { return json.Marshal(o.wire()) }

// UnmarshalJSON reads a $merge op written by MarshalJSON.
func (o *MergeOp) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, o.wire()) }

// UnmarshalJSON reads a host, strictly: a misspelt field is an error.
// Besides the v2 keys it takes cpuModel and memoryBytes, which a host
// fingerprint (QMLSAB_HOST_FINGERPRINT) may be written with
// (results/README.md). A fingerprint overrides only the fields it names.
func (h *Host) UnmarshalJSON(b []byte) error {
	type plain Host
	var w struct {
		plain
		CPUModel    *string `json:"cpuModel"`
		MemoryBytes *int64  `json:"memoryBytes"`
	}
	w.plain = plain(*h)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*h = Host(w.plain)
	if w.CPUModel != nil {
		h.CPUModel = *w.CPUModel
	}
	if w.MemoryBytes != nil {
		h.MemoryBytes = *w.MemoryBytes
	}
	return nil
}

// v1Note is what a reader of a v1 file is told to do.
const v1Note = "v1 is the results format qmlsab wrote for two days before v2, no longer read: " +
	"run the experiment again with this qmlsab, or read the folder with a qmlsab built from commit 2228711 or earlier"

// decodeManifest reads a manifest of the v2 format.
func decodeManifest(b []byte) (Manifest, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Manifest{}, err
	}
	if head.Schema != ManifestSchema {
		return Manifest{}, newSchemaError(head.Schema, ManifestSchema, ManifestSchemaV1)
	}
	var m Manifest
	if err := decodeStrict(b, &m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// decodeTrial reads a trial.json of the v2 format.
func decodeTrial(b []byte) (Trial, error) {
	var t Trial
	if err := decodeStrict(b, &t); err != nil {
		return Trial{}, err
	}
	if t.Schema != TrialSchema {
		return Trial{}, newSchemaError(t.Schema, TrialSchema, TrialSchemaV1)
	}
	return t, nil
}

// newSchemaError refuses a file of schema got, where this qmlsab reads
// want; v1 is the schema's v1 version, refused with what to do.
func newSchemaError(got, want, v1 string) *schemaError {
	e := &schemaError{got: got, want: []string{want}}
	if got == v1 {
		e.note = v1Note
	}
	return e
}

// schemaError is a file of a schema version this qmlsab does not read,
// and what to do about it when there is something to say.
type schemaError struct {
	got  string
	want []string
	note string
}

func (e *schemaError) Error() string {
	msg := fmt.Sprintf("schema %q, this qmlsab reads %s", e.got, strings.Join(quoteAll(e.want), " or "))
	if e.note != "" {
		msg += "; " + e.note
	}
	return msg
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// isSchemaError reports whether err is a schemaError (not corruption).
func isSchemaError(err error) bool {
	var se *schemaError
	return errors.As(err, &se)
}
