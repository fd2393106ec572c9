package query

import (
	"cmp"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
)

// SortKey is one field of a sort specification.
type SortKey struct {
	Path string
	Desc bool
}

// CompileSort parses a sort specification such as {a: 1, b: -1}.
func CompileSort(spec bson.Raw) ([]SortKey, error) {
	if err := checked(spec, "sort specification"); err != nil {
		return nil, err
	}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "bad sort specification: %v", err)
	}
	if len(elems) == 0 {
		return nil, mongoerr.New(15976, "$sort stage must have at least one sort key")
	}
	keys := make([]SortKey, 0, len(elems))
	for _, e := range elems {
		if e.Value().Type == bson.TypeEmbeddedDocument {
			return nil, notImplemented("a $meta sort")
		}
		f, ok := e.Value().AsFloat64OK()
		if !ok || (f != 1 && f != -1) {
			return nil, mongoerr.New(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		keys = append(keys, SortKey{Path: e.Key(), Desc: f < 0})
	}
	return keys, nil
}

// sortValue is a document's key for one sort field: the value the field
// sorts by, or an empty array (which sorts below null and missing).
type sortValue struct {
	v          bson.RawValue
	emptyArray bool
}

// sortKeyOf is the value doc sorts by on k, by mongod's rule: the values
// the path reaches, arrays opened one level; an ascending sort uses the
// smallest of them, a descending sort the largest. A missing field sorts as
// null, an empty array below null.
func sortKeyOf(doc bson.Raw, k SortKey) sortValue {
	var cands []bson.RawValue
	empty := false
	walkPath(Doc(doc), splitPath(k.Path), func(v bson.RawValue) bool {
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			if len(vals) == 0 {
				empty = true
			}
			cands = append(cands, vals...)
			return false
		}
		if v.Type == 0 {
			v = Null
		}
		cands = append(cands, v)
		return false
	})
	if len(cands) == 0 {
		if empty {
			return sortValue{emptyArray: true}
		}
		return sortValue{v: Null}
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if cmp := Compare(c, best); (k.Desc && cmp > 0) || (!k.Desc && cmp < 0) {
			best = c
		}
	}
	if empty && !k.Desc {
		return sortValue{emptyArray: true}
	}
	return sortValue{v: best}
}

func compareSortValues(a, b sortValue) int {
	switch {
	case a.emptyArray && b.emptyArray:
		return 0
	case a.emptyArray:
		if b.v.Type == bson.TypeMinKey {
			return 1
		}
		return -1
	case b.emptyArray:
		return -compareSortValues(b, a)
	}
	return Compare(a.v, b.v)
}

// keyed is a document with its sort key values and its place in the input
// (which breaks ties: sorts are stable).
type keyed struct {
	doc  bson.Raw
	vals []sortValue
	seq  int
}

func keyOf(d bson.Raw, keys []SortKey, seq int) keyed {
	k := keyed{doc: d, seq: seq, vals: make([]sortValue, len(keys))}
	for i, key := range keys {
		k.vals[i] = sortKeyOf(d, key)
	}
	return k
}

func compareKeyed(a, b keyed, keys []SortKey) int {
	for i, k := range keys {
		c := compareSortValues(a.vals[i], b.vals[i])
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(a.seq, b.seq)
}

// sortKeyed sorts ks by keys, checking x for an interrupt as it compares
// (x nil: no checks).
func sortKeyed(x *Execution, ks []keyed, keys []SortKey) (err error) {
	return sortInterruptible(x, ks, func(a, b keyed) int { return compareKeyed(a, b, keys) })
}

// sortInterruptible sorts s by cmp, counting each comparison as work: an
// interrupt seen there stops the sort (by a panic it recovers, the one
// way out of slices.SortFunc) and is returned.
func sortInterruptible[T any](x *Execution, s []T, cmp func(a, b T) int) (err error) {
	if x == nil {
		slices.SortFunc(s, cmp)
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			i, ok := r.(interrupted)
			if !ok {
				panic(r)
			}
			err = i.err
		}
	}()
	slices.SortFunc(s, func(a, b T) int {
		if err := x.tick(); err != nil {
			panic(interrupted{err})
		}
		return cmp(a, b)
	})
	return nil
}

// Sort orders docs in place, stably, by keys.
func Sort(docs []bson.Raw, keys []SortKey) {
	ks := make([]keyed, len(docs))
	for i, d := range docs {
		ks[i] = keyOf(d, keys, i)
	}
	_ = sortKeyed(nil, ks, keys)
	for i := range ks {
		docs[i] = ks[i].doc
	}
}

// CompareBy compares two documents by sort keys.
func CompareBy(a, b bson.Raw, keys []SortKey) int {
	for _, k := range keys {
		c := compareSortValues(sortKeyOf(a, k), sortKeyOf(b, k))
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// projNode is one level of a projection's field tree.
type projNode struct {
	children map[string]*projNode
	order    []string // child names in specification order
	leaf     bool     // included or excluded here
	expr     Expr     // a computed field (inclusion projections only)
}

func newProjNode() *projNode { return &projNode{children: map[string]*projNode{}} }

// Projection is a compiled find/$project projection.
type Projection struct {
	include   bool
	root      *projNode
	excludeID bool
}

// CompileProjection parses an inclusion ({a:1, "b.c":1, d:"$e"}) or
// exclusion ({a:0}) projection. _id is kept unless excluded explicitly; a
// dotted path projects below embedded documents and in each document of an
// array. Positional ("a.$"), $slice, $elemMatch and $meta projections are
// refused with NotImplemented.
func CompileProjection(spec bson.Raw) (*Projection, error) {
	if err := checked(spec, "projection"); err != nil {
		return nil, err
	}
	p := &Projection{root: newProjNode()}
	elems, err := spec.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "bad projection: %v", err)
	}
	if len(elems) == 0 {
		return nil, nil
	}
	mode := 0 // 1 inclusion, -1 exclusion
	idMode := 0
	if err := p.add("", spec, &mode, &idMode); err != nil {
		return nil, err
	}
	switch {
	case mode == 0 && idMode == 0:
		return nil, nil
	case mode == 0 && idMode > 0:
		mode = 1 // {_id: 1}: only _id
	case mode == 0:
		mode = -1 // {_id: 0}: everything else
	}
	p.include = mode > 0
	p.excludeID = idMode < 0
	if !p.include && idMode < 0 {
		p.insert([]string{"_id"}, nil)
	}
	return p, nil
}

func (p *Projection) add(prefix string, spec bson.Raw, mode, idMode *int) error {
	elems, _ := spec.Elements()
	for _, e := range elems {
		k, v := prefix+e.Key(), e.Value()
		if strings.HasSuffix(k, ".$") || strings.Contains(k, ".$.") || k == "$" {
			return notImplemented("positional projection")
		}
		isFlag := v.Type == bson.TypeBoolean || IsNumber(v)
		if k == "_id" && isFlag {
			*idMode = 1
			if !Truthy(v) {
				*idMode = -1
			}
			continue
		}
		var expr Expr
		m := 1
		switch {
		case isFlag:
			if !Truthy(v) {
				m = -1
			}
		case v.Type == bson.TypeEmbeddedDocument:
			d := bson.Raw(v.Document())
			first, err := d.IndexErr(0)
			if err != nil {
				return mongoerr.New(51270, "An empty sub-projection is not a valid value. Found empty object at path")
			}
			if !strings.HasPrefix(first.Key(), "$") {
				if err := p.add(k+".", d, mode, idMode); err != nil {
					return err
				}
				continue
			}
			switch first.Key() {
			case "$slice", "$elemMatch", "$meta":
				return notImplemented("the projection operator " + first.Key())
			}
			// mongod's projection parser (find and $project alike) takes
			// {f: {$op: ...}} as an expression only when $op is one;
			// otherwise it is an unknown expression, 31325, not the
			// expression parser's InvalidPipelineOperator.
			if elems, _ := d.Elements(); len(elems) == 1 && !isExpressionName(first.Key()) {
				return mongoerr.New(31325, "Unknown expression %s", first.Key())
			}
			fallthrough
		default:
			var err error
			if expr, err = CompileExpr(v); err != nil {
				return err
			}
		}
		if *mode < 0 && expr != nil {
			return mongoerr.New(31252, "Cannot use expression other than $meta in exclusion projection")
		}
		if *mode != 0 && m != *mode {
			if *mode > 0 {
				return mongoerr.New(31254, "Cannot do exclusion on field %s in inclusion projection", k)
			}
			return mongoerr.New(31253, "Cannot do inclusion on field %s in exclusion projection", k)
		}
		*mode = m
		if err := p.insert(splitPath(k), expr); err != nil {
			return err
		}
	}
	return nil
}

func (p *Projection) insert(parts []string, expr Expr) error {
	n := p.root
	for i, part := range parts {
		child := n.children[part]
		if child == nil {
			child = newProjNode()
			n.children[part] = child
			n.order = append(n.order, part)
		} else if child.leaf || i == len(parts)-1 {
			return mongoerr.New(31250, "Path collision at %s", strings.Join(parts, "."))
		}
		n = child
	}
	n.leaf, n.expr = true, expr
	return nil
}

// Apply projects doc.
func (p *Projection) Apply(doc bson.Raw) (bson.Raw, error) {
	if p == nil {
		return doc, nil
	}
	if !p.include {
		return p.root.exclude(doc), nil
	}
	var keys []string
	var vals []bson.RawValue
	if !p.excludeID && p.root.children["_id"] == nil {
		if id := Lookup(doc, "_id"); id.Type != 0 {
			keys, vals = append(keys, "_id"), append(vals, id)
		}
	}
	k, v, err := p.root.include(doc, doc)
	if err != nil {
		return nil, err
	}
	return Build(append(keys, k...), append(vals, v...)), nil
}

// include keeps the document's fields named in the tree, in the document's
// order, then appends the computed fields in specification order.
func (n *projNode) include(d, root bson.Raw) ([]string, []bson.RawValue, error) {
	var keys []string
	var vals []bson.RawValue
	elems, _ := d.Elements()
	for _, e := range elems {
		child := n.children[e.Key()]
		if child == nil || child.expr != nil {
			continue
		}
		v := e.Value()
		if !child.leaf {
			var err error
			if v, err = child.includeValue(v, root); err != nil {
				return nil, nil, err
			}
			if v.Type == 0 {
				continue
			}
		}
		keys, vals = append(keys, e.Key()), append(vals, v)
	}
	for _, name := range n.order {
		child := n.children[name]
		if child.expr == nil && !child.hasExpr() {
			continue
		}
		var v bson.RawValue
		if child.expr != nil {
			var err error
			if v, err = child.expr.Eval(root); err != nil {
				return nil, nil, err
			}
		} else if i := slices.Index(keys, name); i >= 0 {
			continue // computed fields below an included subdocument were added there
		} else {
			ck, cv, err := child.include(bson.Raw{5, 0, 0, 0, 0}, root)
			if err != nil {
				return nil, nil, err
			}
			v = Doc(Build(ck, cv))
		}
		if v.Type == 0 {
			continue
		}
		keys, vals = append(keys, name), append(vals, v)
	}
	return keys, vals, nil
}

func (n *projNode) hasExpr() bool {
	if n.expr != nil {
		return true
	}
	for _, c := range n.children {
		if c.hasExpr() {
			return true
		}
	}
	return false
}

// includeValue projects the subtree below a document or, element by
// element, an array; other values have no subfields to keep.
func (n *projNode) includeValue(v bson.RawValue, root bson.Raw) (bson.RawValue, error) {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		k, vs, err := n.include(v.Document(), root)
		if err != nil {
			return Missing, err
		}
		return Doc(Build(k, vs)), nil
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		var out []bson.RawValue
		for _, e := range vals {
			if e.Type != bson.TypeEmbeddedDocument && e.Type != bson.TypeArray {
				if n.hasExpr() {
					ev, err := n.includeValue(Doc(bson.Raw{5, 0, 0, 0, 0}), root)
					if err != nil {
						return Missing, err
					}
					out = append(out, ev)
				}
				continue
			}
			ev, err := n.includeValue(e, root)
			if err != nil {
				return Missing, err
			}
			out = append(out, ev)
		}
		return Array(out), nil
	}
	if n.hasExpr() {
		return n.includeValue(Doc(bson.Raw{5, 0, 0, 0, 0}), root)
	}
	return Missing, nil
}

// exclude drops the fields named in the tree, below documents and in each
// document of an array.
func (n *projNode) exclude(d bson.Raw) bson.Raw {
	var keys []string
	var vals []bson.RawValue
	elems, _ := d.Elements()
	for _, e := range elems {
		child := n.children[e.Key()]
		v := e.Value()
		switch {
		case child == nil:
		case child.leaf:
			continue
		default:
			v = child.excludeValue(v)
		}
		keys, vals = append(keys, e.Key()), append(vals, v)
	}
	return Build(keys, vals)
}

func (n *projNode) excludeValue(v bson.RawValue) bson.RawValue {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return Doc(n.exclude(v.Document()))
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		out := make([]bson.RawValue, len(vals))
		for i, e := range vals {
			out[i] = n.excludeValue(e)
		}
		return Array(out)
	}
	return v
}
