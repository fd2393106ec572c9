// Package specdiff says, key by key, how two definitions differ: a run's
// resolved workload (the JSON its manifest records) or one arm's
// definition (the arms YAML a manifest records, one arm's entry). The
// history stores both with each night and names what changed between
// nights ("storm_rate 271.5 → 320"), and a report names the key that
// keeps two runs from being pooled.
//
// A definition is a tree of objects, lists and scalars. It is flattened
// into one line per scalar, keyed by its path (objects' keys joined by
// '.', list items as [i]: "phases.storm_s", "actors[0].killop.rssHighPercent"),
// and two definitions differ where a key's value differs or a key is on one
// side only. Written by hand: JSON Patch libraries (RFC 6902) produce
// operations on pointers, not the "key old → new" lines people read, and
// flattening a decoded tree is a few lines.
package specdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Change is one key whose value differs. Old or New is Unset when the key
// is on one side only.
type Change struct {
	Key      string
	Old, New string
}

// Unset stands for a key a definition does not have.
const Unset = "(unset)"

// String is "key old → new".
func (c Change) String() string { return c.Key + " " + c.Old + " → " + c.New }

// Options shape a comparison.
type Options struct {
	// Ignore are top-level keys left out (a description, which changes
	// nothing that runs).
	Ignore []string
	// Strip is a top-level object whose keys are named without its name
	// (a workload's kind section: "storm_rate", not
	// "spill_to_disk.storm_rate"), when both sides have it.
	Strip string
}

// Diff compares two JSON documents and returns their changes, sorted by
// key. Identical documents (whatever their key order or spacing) have
// none.
func Diff(old, new []byte, o Options) ([]Change, error) {
	a, err := Flatten(old, o)
	if err != nil {
		return nil, fmt.Errorf("specdiff: the first definition: %w", err)
	}
	b, err := Flatten(new, o)
	if err != nil {
		return nil, fmt.Errorf("specdiff: the second definition: %w", err)
	}
	keys := maps.Clone(a)
	maps.Copy(keys, b)
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		av, aok := a[k]
		bv, bok := b[k]
		if aok && bok && av == bv {
			continue
		}
		if !aok {
			av = Unset
		}
		if !bok {
			bv = Unset
		}
		out = append(out, Change{Key: k, Old: av, New: bv})
	}
	return out, nil
}

// Flatten is a JSON document's scalars by path (Diff's keys), each value
// written as JSON writes it (strings unquoted).
func Flatten(doc []byte, o Options) (map[string]string, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	if obj, ok := v.(map[string]any); ok {
		obj = maps.Clone(obj)
		for _, k := range o.Ignore {
			delete(obj, k)
		}
		if inner, ok := obj[o.Strip].(map[string]any); ok && o.Strip != "" {
			delete(obj, o.Strip)
			flatten(out, "", inner)
		}
		v = obj
	}
	flatten(out, "", v)
	return out, nil
}

func flatten(out map[string]string, path string, v any) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && path != "" {
			out[path] = "{}"
		}
		for k, e := range x {
			flatten(out, join(k), e)
		}
	case []any:
		if len(x) == 0 && path != "" {
			out[path] = "[]"
		}
		for i, e := range x {
			flatten(out, path+"["+strconv.Itoa(i)+"]", e)
		}
	case string:
		out[path] = x
	case nil:
		out[path] = "null"
	default:
		b, _ := json.Marshal(x)
		out[path] = string(b)
	}
}

// Describe lists changes in one line, at most max of them ("… and N more"
// beyond); max ≤ 0 lists all.
func Describe(changes []Change, max int) string {
	var parts []string
	for i, c := range changes {
		if max > 0 && i == max {
			parts = append(parts, fmt.Sprintf("… and %d more", len(changes)-max))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, ", ")
}

// Canonical is a JSON document with its objects' keys sorted and no
// spacing, so equal definitions are equal bytes (and digests).
func Canonical(doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Arms reads an arms YAML document (an arms file, or the arms a run's
// manifest records) into each arm's definition as canonical JSON, by arm
// name: the arm's entry as written, without its name and description
// (which change nothing that runs).
func Arms(doc string) (map[string]json.RawMessage, error) {
	var file struct {
		Arms []map[string]any `yaml:"arms"`
	}
	if err := yaml.Unmarshal([]byte(doc), &file); err != nil {
		return nil, fmt.Errorf("specdiff: arms: %w", err)
	}
	out := map[string]json.RawMessage{}
	for i, a := range file.Arms {
		name, ok := a["name"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("specdiff: arms[%d]: no name", i)
		}
		def := maps.Clone(a)
		delete(def, "name")
		delete(def, "description")
		b, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("specdiff: arm %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}
