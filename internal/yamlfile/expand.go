package yamlfile

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxExpandedNodes caps the nodes a document may hold once its aliases are
// expanded: anchors let a file share a value between arms or gates, but a
// few lines of nested aliases ("billion laughs") could otherwise stand for
// billions of nodes.
const MaxExpandedNodes = 100_000

// maxDepth caps the nesting of an expanded document.
const maxDepth = 200

// Expand replaces, in place, every alias in the document under n by a copy
// of the node its anchor names (the copy's top carries the alias's line),
// and applies merge keys ("<<: *common" or "<<: [*a, *b]"): the merged
// mapping's keys are added where the mapping does not set them itself,
// earlier mappings of a list winning over later ones. A document that would
// expand past MaxExpandedNodes or nest deeper than maxDepth is an error
// naming the file and the line of the alias that crosses the limit.
func Expand(file string, n *yaml.Node) error {
	e := expander{file: file}
	out, err := e.node(n, 0)
	if err != nil {
		return err
	}
	*n = *out
	return nil
}

type expander struct {
	file  string
	count int
}

func (e *expander) node(n *yaml.Node, depth int) (*yaml.Node, error) {
	e.count++
	if e.count > MaxExpandedNodes {
		return nil, Errorf(e.file, n.Line, "the document expands past %d nodes once its aliases are replaced (an alias bomb?); share values with fewer nested aliases", MaxExpandedNodes)
	}
	if depth > maxDepth {
		return nil, Errorf(e.file, n.Line, "the document nests deeper than %d levels once its aliases are replaced", maxDepth)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, Errorf(e.file, n.Line, "alias *%s names no anchor", n.Value)
		}
		c, err := e.node(n.Alias, depth+1)
		if err != nil {
			return nil, err
		}
		c.Line, c.Column, c.Anchor = n.Line, n.Column, ""
		return c, nil
	}
	c := *n
	c.Content = nil
	if n.Kind != yaml.MappingNode {
		for _, k := range n.Content {
			x, err := e.node(k, depth+1)
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, x)
		}
		return &c, nil
	}
	var merged [][2]*yaml.Node
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		x, err := e.node(v, depth+1)
		if err != nil {
			return nil, err
		}
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			sources := []*yaml.Node{x}
			if x.Kind == yaml.SequenceNode {
				sources = x.Content
			}
			for _, s := range sources {
				if s.Kind != yaml.MappingNode {
					return nil, Errorf(e.file, k.Line, "<<: merges mappings, got %s", KindName(s))
				}
				for j := 0; j+1 < len(s.Content); j += 2 {
					merged = append(merged, [2]*yaml.Node{s.Content[j], s.Content[j+1]})
				}
			}
			continue
		}
		kc := *k
		set[k.Value] = true
		c.Content = append(c.Content, &kc, x)
	}
	for _, kv := range merged {
		if !set[kv[0].Value] {
			set[kv[0].Value] = true
			c.Content = append(c.Content, kv[0], kv[1])
		}
	}
	return &c, nil
}

// KindName says what a node is, for an error that wanted another: "a
// mapping", "a list", a scalar's value quoted, or "nothing".
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// definitionKey matches the names a definition may have (see
// IsDefinition).
var definitionKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// IsDefinition reports whether a top-level entry only defines an anchor
// for aliases elsewhere to use ("common: &common {…}"): its value carries
// an anchor and its key is a plain name that the file's format does not
// itself use (known).
func IsDefinition(key, value *yaml.Node, known map[string]bool) bool {
	return value.Anchor != "" && key.Kind == yaml.ScalarNode && definitionKey.MatchString(key.Value) && !known[key.Value]
}

// fieldNames are the top-level keys a struct type decodes (yaml tags, or
// the lower-cased field name, and those of inlined structs).
func fieldNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k := range fieldNames(f.Type) {
				out[k] = true
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = true
	}
	return out
}
