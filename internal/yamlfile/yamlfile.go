// Package yamlfile reads the YAML files users write for qmlsab (arms,
// workloads, gates) so that every problem is reported the same way: the
// file, the line of the offending key, and what is wrong.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a problem in a YAML file, at a line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Errorf is an Error at a line.
func Errorf(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: max(line, 1), Msg: fmt.Sprintf(format, args...)}
}

// Wrap turns a yaml.v3 error ("yaml: line N: ...", or a TypeError listing
// several) into an Error naming the file and the first problem's line.
func Wrap(file string, err error) *Error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = plainTypes(msg)
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, tail, _ := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); err == nil {
			return &Error{File: file, Line: n, Msg: tail}
		}
	}
	return &Error{File: file, Line: 1, Msg: msg}
}

// goTypes are the Go types yaml.v3's messages name, said as what a user
// writes instead.
var goTypes = map[string]string{
	"time.Duration": "a duration like 30s or 1m30s",
	"int":           "a whole number", "int64": "a whole number", "uint64": "a whole number",
	"float64": "a number", "bool": "true or false", "string": "a string",
}

// plainTypes rewrites "cannot unmarshal !!str `x` into time.Duration" as
// "`x`: want a duration like 30s or 1m30s".
func plainTypes(msg string) string {
	head, rest, ok := strings.Cut(msg, "cannot unmarshal ")
	if !ok {
		return msg
	}
	value, goType, ok := strings.Cut(rest, " into ")
	want, known := goTypes[goType]
	if !ok || !known {
		return msg
	}
	if _, v, ok := strings.Cut(value, " "); ok { // drop the YAML tag (!!str)
		value = v
	}
	return head + value + ": want " + want
}

// ParseDocument reads the one YAML document a qmlsab file holds and
// returns its document node (with no content when the file is empty or
// only comments; each caller says what it wanted). A second document — a
// "---" after the first, even an empty one — is an error at its line:
// yaml.v3 reads the first document of a stream and drops the rest
// silently, so a workload or arms file written as two documents would run
// half of what it says. Every YAML file qmlsab reads (arms, workloads,
// gates, import specs) comes through here.
func ParseDocument(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode}, nil
		}
		return nil, Wrap(file, err)
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
		return &root, nil
	case err != nil:
		return nil, Wrap(file, err)
	}
	return nil, Errorf(file, second.Line, "a second YAML document starts here (---): the file must hold one document")
}

// Find is the node at path under node (mapping keys, or list indices
// written as numbers), or nil when the path does not exist.
func Find(node *yaml.Node, path ...string) *yaml.Node {
	if node != nil && node.Kind == yaml.DocumentNode {
		if len(node.Content) == 0 {
			return nil
		}
		node = node.Content[0]
	}
	for _, p := range path {
		if node == nil {
			return nil
		}
		var next *yaml.Node
		switch node.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == p {
					next = node.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i >= 0 && i < len(node.Content) {
				next = node.Content[i]
			}
		}
		node = next
	}
	return node
}

// DecodeStrict decodes a YAML document into v, refusing unknown keys and
// wrong types, and returns the document's root node (aliases expanded and
// merge keys applied, see Expand) for Line. An empty document and a second
// document (ParseDocument) are errors. Anchors, aliases and merge keys are
// accepted within the expansion limit; a top-level key of its own that
// only defines an anchor ("common: &common {…}", see IsDefinition) is not
// an unknown key.
func DecodeStrict(file string, data []byte, v any) (*yaml.Node, error) {
	rootp, err := ParseDocument(file, data)
	if err != nil {
		return nil, err
	}
	root := *rootp
	if len(root.Content) == 0 {
		return nil, Errorf(file, 1, "empty file")
	}
	var defs []string
	if doc := root.Content[0]; doc.Kind == yaml.MappingNode {
		known := fieldNames(reflect.TypeOf(v))
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if IsDefinition(doc.Content[i], doc.Content[i+1], known) {
				defs = append(defs, doc.Content[i].Value)
			}
		}
	}
	if err := Expand(file, &root); err != nil {
		return nil, err
	}
	// yaml.v3 checks unknown keys only when decoding bytes, not nodes: the
	// document is decoded into a struct holding v's type inline and one
	// field per definition, so lines in its errors stay the file's own.
	target := v
	var holder reflect.Value
	if rv := reflect.ValueOf(v); len(defs) > 0 && rv.Kind() == reflect.Pointer && rv.Elem().Kind() == reflect.Struct {
		fields := []reflect.StructField{{Name: "Doc", Type: rv.Elem().Type(), Tag: `yaml:",inline"`}}
		for i, d := range defs {
			fields = append(fields, reflect.StructField{Name: fmt.Sprintf("Def%d", i), Type: reflect.TypeFor[yaml.Node](), Tag: reflect.StructTag(fmt.Sprintf("yaml:%q", d))})
		}
		holder = reflect.New(reflect.StructOf(fields))
		holder.Elem().Field(0).Set(rv.Elem())
		target = holder.Interface()
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(target); err != nil && !errors.Is(err, io.EOF) {
		return nil, Wrap(file, err)
	}
	if holder.IsValid() {
		reflect.ValueOf(v).Elem().Set(holder.Elem().Field(0))
	}
	return root.Content[0], nil
}

// Line is the line of the value at path under node (mapping keys, or list
// indices written as numbers): the key's own line when the path exists,
// else the line of the deepest part that does.
func Line(node *yaml.Node, path ...string) int {
	if node == nil {
		return 1
	}
	line := node.Line
	for _, p := range path {
		var next *yaml.Node
		switch node.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == p {
					line, next = node.Content[i].Line, node.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i >= 0 && i < len(node.Content) {
				next = node.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			break
		}
		node = next
	}
	return line
}
