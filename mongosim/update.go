package mongosim

import (
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/mongoerr"
	"github.com/qmlsab/qmlsab/mongosim/query"
)

// cmdUpdate applies replacement and operator updates (applyUpdate), with
// upsert and multi.
func (s *Server) cmdUpdate(r *request) (bson.D, error) {
	coll := r.str("update")
	ns := r.db + "." + coll
	updates := r.seqs["updates"]
	if updates == nil {
		arr, _ := r.body.Lookup("updates").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				updates = append(updates, bson.Raw(d))
			}
		}
	}
	lsid := r.body.Lookup("lsid")
	txn, _ := r.body.Lookup("txnNumber").AsInt64OK()
	s.counters.update.Add(int64(len(updates)))
	s.mu.Lock()
	if s.repl.state != statePrimary {
		s.mu.Unlock()
		return nil, s.checkState(r, writeCmd)
	}
	if k := sessionKey(lsid); k != "" && txn > 0 && s.repl.sessions[k].txn == txn {
		ot := s.repl.lastApplied
		s.mu.Unlock()
		return s.writeReply(r, bson.D{{Key: "n", Value: int32(s.repl.sessions[k].n)}, {Key: "nModified", Value: int32(0)}}, ot), nil
	}
	ordered := true
	if o, ok := r.body.Lookup("ordered").BooleanOK(); ok {
		ordered = o
	}
	var entries []oplogEntry
	n, modified := 0, 0
	upserted := bson.A{}
	writeErrors := bson.A{}
	for i, u := range updates {
		q, _ := u.Lookup("q").DocumentOK()
		mod, _ := u.Lookup("u").DocumentOK()
		upsert, _ := u.Lookup("upsert").BooleanOK()
		multi, _ := u.Lookup("multi").BooleanOK()
		f, err := query.CompileFilter(bson.Raw(q))
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		if err := checkUpdateOptions(u); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		var targets []bson.Raw
		if c := s.data.coll(ns, false); c != nil {
			if id, ok := query.IDEquality(bson.Raw(q)); ok {
				if d, found := c.get(id); found {
					targets = append(targets, d)
				}
			} else {
				for _, d := range c.snapshot() {
					if f.Match(d) {
						targets = append(targets, d)
						if !multi {
							break
						}
					}
				}
			}
		}
		if len(targets) == 0 && upsert {
			base := equalityFields(bson.Raw(q))
			doc, err := applyUpdate(base, bson.Raw(mod), nil, true)
			if err != nil {
				writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: err.Code}, {Key: "errmsg", Value: err.Msg}})
				break
			}
			if doc.Lookup("_id").Type == 0 {
				doc = prependID(doc, bson.NewObjectID())
			}
			entries = append(entries, s.logLocked(oplogOp{op: "i", ns: ns, o: doc}, lsid, txn))
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: doc.Lookup("_id")}})
			n++
			continue
		}
		failed := false
		for _, t := range targets {
			doc, err := applyUpdate(t, bson.Raw(mod), f, false)
			if err != nil {
				writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: err.Code}, {Key: "errmsg", Value: err.Msg}})
				failed = true
				break
			}
			doc = withID(doc, t.Lookup("_id"))
			n++
			if string(doc) != string(t) {
				modified++
				entries = append(entries, s.logLocked(oplogOp{op: "u", ns: ns, o: doc, o2: idDoc(doc)}, lsid, txn))
			}
		}
		if failed && ordered {
			break
		}
	}
	err := s.persistLocked(entries)
	ot := s.repl.lastApplied
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	reply := bson.D{{Key: "n", Value: int32(n)}, {Key: "nModified", Value: int32(modified)}}
	if len(upserted) > 0 {
		reply = append(reply, bson.E{Key: "upserted", Value: upserted})
	}
	if len(writeErrors) > 0 {
		reply = append(reply, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	return s.writeReply(r, reply, ot), nil
}

// checkUpdateOptions refuses update statement options mongosim does not
// implement.
func checkUpdateOptions(u bson.Raw) error {
	if u.Lookup("arrayFilters").Type != 0 {
		return mongoerr.New(mongoerr.NotImplemented, "arrayFilters are not implemented by mongosim")
	}
	if _, ok := u.Lookup("u").ArrayOK(); ok {
		return mongoerr.New(mongoerr.NotImplemented, "pipeline-style updates are not implemented by mongosim")
	}
	return nil
}

// equalityFields is the document an upsert starts from: the query's
// equality conditions (plain values and $eq, dotted paths made nested, at
// the top level and inside $and), _id first.
func equalityFields(q bson.Raw) bson.Raw {
	root := &mdoc{}
	var collect func(q bson.Raw)
	collect = func(q bson.Raw) {
		elems, _ := q.Elements()
		for _, e := range elems {
			k, v := e.Key(), e.Value()
			if k == "$and" {
				arr, _ := v.ArrayOK()
				vals, _ := arr.Values()
				for _, sub := range vals {
					if d, ok := sub.DocumentOK(); ok {
						collect(bson.Raw(d))
					}
				}
				continue
			}
			if strings.HasPrefix(k, "$") {
				continue
			}
			if d, ok := v.DocumentOK(); ok {
				if first, err := bson.Raw(d).IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
					eq, err := bson.Raw(d).LookupErr("$eq")
					if err != nil || len(d) == 0 {
						continue
					}
					v = eq
				}
			}
			parts := strings.Split(k, ".")
			if c, _ := root.container(parts[:len(parts)-1], true); c != nil {
				_ = c.put(parts[len(parts)-1], toTree(v))
			}
		}
	}
	collect(q)
	if i := slices.Index(root.keys, "_id"); i > 0 {
		id := root.vals[i]
		root.remove("_id")
		root.keys, root.vals = append([]string{"_id"}, root.keys...), append([]any{id}, root.vals...)
	}
	return root.raw()
}

// updateOp is one field of an update modifier: {$set: {path: arg}}.
type updateOp struct {
	op    string
	path  string
	parts []string
	arg   bson.RawValue
}

var modifiers = map[string]bool{"$set": true, "$unset": true, "$inc": true, "$mul": true, "$min": true, "$max": true,
	"$push": true, "$addToSet": true, "$pull": true, "$rename": true, "$setOnInsert": true}

// parseModifier reads an operator update, refusing unknown operators and
// paths that conflict (one equal to or a prefix of another), as mongod does.
func parseModifier(mod bson.Raw) ([]updateOp, *mongoerr.Error) {
	var ops []updateOp
	elems, _ := mod.Elements()
	for _, e := range elems {
		op := e.Key()
		switch {
		case op == "$currentDate" || op == "$pullAll" || op == "$pop" || op == "$bit":
			return nil, mongoerr.New(mongoerr.NotImplemented, "the update operator %s is not implemented by mongosim", op)
		case !modifiers[op]:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", op)
		}
		fields, ok := e.Value().DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s: %s}", e.Value().Type, op, e.Value())
		}
		fe, _ := bson.Raw(fields).Elements()
		for _, f := range fe {
			path, arg := f.Key(), f.Value()
			if path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
				return nil, mongoerr.New(56, "An empty update path is not valid.")
			}
			for _, part := range strings.Split(path, ".") {
				if strings.HasPrefix(part, "$[") {
					return nil, mongoerr.New(mongoerr.NotImplemented, "the all-positional and filtered positional operators are not implemented by mongosim")
				}
			}
			if (op == "$inc" || op == "$mul") && !query.IsNumber(arg) {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "Cannot %s with non-numeric argument: {%s: %s}", map[string]string{"$inc": "increment", "$mul": "multiply"}[op], path, arg)
			}
			ops = append(ops, updateOp{op: op, path: path, parts: strings.Split(path, "."), arg: arg})
			if op == "$rename" {
				to, ok := arg.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s: %s", path, arg)
				}
				if to == path {
					return nil, mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must differ: %s: %q", path, to)
				}
				if strings.Contains(path, "$") || strings.Contains(to, "$") {
					return nil, mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must not contain '$'")
				}
				ops = append(ops, updateOp{op: "$rename-to", path: to, parts: strings.Split(to, "."), arg: bson.RawValue{Type: bson.TypeString, Value: []byte(path)}})
			}
		}
	}
	for i := range ops {
		for j := i + 1; j < len(ops); j++ {
			a, b := ops[i].path, ops[j].path
			if a == b || strings.HasPrefix(b, a+".") || strings.HasPrefix(a, b+".") {
				shorter := a
				if len(b) < len(a) {
					shorter = b
				}
				return nil, mongoerr.New(mongoerr.ConflictingUpdateOperators, "Updating the path '%s' would create a conflict at '%s'", b, shorter)
			}
		}
	}
	// mongod (5.0+) applies an update's fields in field-name order, numeric
	// names in numeric order, so new fields land in that order.
	slices.SortStableFunc(ops, func(x, y updateOp) int { return comparePaths(x.parts, y.parts) })
	return ops, nil
}

func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		na, ea := strconv.Atoi(a[i])
		nb, eb := strconv.Atoi(b[i])
		if ea == nil && eb == nil {
			if na != nb {
				return na - nb
			}
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// applyUpdate applies a replacement or an operator update to doc. filter
// is the update's query (the positional operator reads which array element
// it matched); inserting is set for an upsert's insert, which applies
// $setOnInsert and may set _id.
func applyUpdate(doc, mod bson.Raw, filter *query.Filter, inserting bool) (bson.Raw, *mongoerr.Error) {
	first, err := mod.IndexErr(0)
	oldID := doc.Lookup("_id")
	if err != nil || !strings.HasPrefix(first.Key(), "$") {
		elems, _ := mod.Elements()
		for _, e := range elems {
			if strings.HasPrefix(e.Key(), "$") {
				return nil, mongoerr.New(mongoerr.BadValue, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document.", e.Key(), e.Key())
			}
		}
		newID := mod.Lookup("_id")
		if !inserting && oldID.Type != 0 && newID.Type != 0 && !sameValue(oldID, newID) {
			return nil, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s", newID)
		}
		if oldID.Type != 0 {
			return withID(mod, oldID), nil
		}
		return mod, nil
	}
	ops, perr := parseModifier(mod)
	if perr != nil {
		return nil, perr
	}
	root := toTree(query.Doc(doc)).(*mdoc)
	position := -1
	for _, op := range ops {
		if op.op == "$setOnInsert" && !inserting {
			continue
		}
		parts := op.parts
		if i := slices.Index(parts, "$"); i >= 0 {
			if position < 0 {
				if inserting || filter == nil {
					return nil, mongoerr.New(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
				}
				position = matchedPosition(doc, parts[:i], filter)
				if position < 0 {
					return nil, mongoerr.New(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
				}
			}
			parts = slices.Clone(parts)
			parts[i] = strconv.Itoa(position)
			if slices.Contains(parts[i+1:], "$") {
				return nil, mongoerr.New(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", op.path)
			}
		}
		if err := root.apply(op, parts); err != nil {
			return nil, err
		}
	}
	out := root.raw()
	if newID := out.Lookup("_id"); !inserting && oldID.Type != 0 && (newID.Type == 0 || !sameValue(oldID, newID)) {
		return nil, mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'")
	}
	return out, nil
}

// sameValue is byte-for-byte equality of type and value (an _id of 1 is
// not an _id of 1.0 to the immutability check).
func sameValue(a, b bson.RawValue) bool {
	return a.Type == b.Type && string(a.Value) == string(b.Value)
}

// matchedPosition is the index of the first element of the array at
// arrayPath that the query's conditions on that array match: the query is
// run against doc with the array narrowed to each element in turn. -1 when
// the query names no condition on the array or none matches.
func matchedPosition(doc bson.Raw, arrayPath []string, filter *query.Filter) int {
	path := strings.Join(arrayPath, ".")
	if !filter.Constrains(path) {
		return -1
	}
	root := toTree(query.Doc(doc)).(*mdoc)
	c, _ := root.container(arrayPath[:len(arrayPath)-1], false)
	if c == nil {
		return -1
	}
	arr, ok := c.get(arrayPath[len(arrayPath)-1]).(*marr)
	if !ok {
		return -1
	}
	elems := arr.vals
	for i, e := range elems {
		_ = c.put(arrayPath[len(arrayPath)-1], &marr{vals: []any{e}})
		if filter.Match(root.raw()) {
			return i
		}
	}
	return -1
}

// mdoc and marr are a document and an array being updated; their values
// are *mdoc, *marr or a bson.RawValue leaf.
type mdoc struct {
	keys []string
	vals []any
}

type marr struct{ vals []any }

// container is where a path's parent is in a tree being updated.
type container interface {
	get(part string) any
	put(part string, v any) *mongoerr.Error
	remove(part string)
	describe() string
}

func toTree(v bson.RawValue) any {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		d := &mdoc{}
		elems, _ := v.Document().Elements()
		for _, e := range elems {
			d.keys, d.vals = append(d.keys, e.Key()), append(d.vals, toTree(e.Value()))
		}
		return d
	case bson.TypeArray:
		a := &marr{}
		vals, _ := v.Array().Values()
		for _, e := range vals {
			a.vals = append(a.vals, toTree(e))
		}
		return a
	}
	return v
}

func fromTree(v any) bson.RawValue {
	switch t := v.(type) {
	case *mdoc:
		return query.Doc(t.raw())
	case *marr:
		vals := make([]bson.RawValue, len(t.vals))
		for i, e := range t.vals {
			vals[i] = fromTree(e)
		}
		return query.Array(vals)
	}
	return v.(bson.RawValue)
}

func (d *mdoc) raw() bson.Raw {
	vals := make([]bson.RawValue, len(d.vals))
	for i, v := range d.vals {
		vals[i] = fromTree(v)
	}
	return query.Build(d.keys, vals)
}

func (d *mdoc) get(part string) any {
	if i := slices.Index(d.keys, part); i >= 0 {
		return d.vals[i]
	}
	return nil
}

func (d *mdoc) put(part string, v any) *mongoerr.Error {
	if i := slices.Index(d.keys, part); i >= 0 {
		d.vals[i] = v
		return nil
	}
	d.keys, d.vals = append(d.keys, part), append(d.vals, v)
	return nil
}

func (d *mdoc) remove(part string) {
	if i := slices.Index(d.keys, part); i >= 0 {
		d.keys, d.vals = slices.Delete(d.keys, i, i+1), slices.Delete(d.vals, i, i+1)
	}
}

func (d *mdoc) describe() string { return d.raw().String() }

func (a *marr) get(part string) any {
	if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(a.vals) {
		return a.vals[i]
	}
	return nil
}

func (a *marr) put(part string, v any) *mongoerr.Error {
	i, err := strconv.Atoi(part)
	if err != nil || i < 0 {
		return mongoerr.New(mongoerr.PathNotViable, "Cannot create field '%s' in element {%s}", part, fromTree(a))
	}
	for len(a.vals) <= i {
		a.vals = append(a.vals, query.Null)
	}
	a.vals[i] = v
	return nil
}

// remove of an array element leaves null in its place, as $unset does.
func (a *marr) remove(part string) {
	if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(a.vals) {
		a.vals[i] = query.Null
	}
}

func (a *marr) describe() string { return fromTree(a).String() }

// container walks to the parent of a path's last component. With create,
// missing documents on the way are made; a value that cannot hold a field
// is PathNotViable. Without create, a path that does not exist is nil.
func (d *mdoc) container(parts []string, create bool) (container, *mongoerr.Error) {
	var c container = d
	for _, part := range parts {
		next := c.get(part)
		switch n := next.(type) {
		case *mdoc:
			c = n
			continue
		case *marr:
			c = n
			continue
		case nil:
			if !create {
				return nil, nil
			}
			nd := &mdoc{}
			if err := c.put(part, nd); err != nil {
				return nil, err
			}
			c = nd
			continue
		}
		if !create {
			return nil, nil
		}
		return nil, mongoerr.New(mongoerr.PathNotViable, "Cannot create field '%s' in element {%s: %s}", part, part, fromTree(next))
	}
	return c, nil
}

func (d *mdoc) apply(op updateOp, parts []string) *mongoerr.Error {
	if op.op == "$rename-to" {
		return nil // moved by its $rename
	}
	parent, last := parts[:len(parts)-1], parts[len(parts)-1]
	create := op.op != "$unset" && op.op != "$pull" && op.op != "$rename"
	c, err := d.container(parent, create)
	if err != nil || c == nil {
		return err
	}
	cur := c.get(last)
	switch op.op {
	case "$set", "$setOnInsert":
		return c.put(last, toTree(op.arg))
	case "$unset":
		if cur != nil {
			c.remove(last)
		}
	case "$inc", "$mul":
		if cur == nil {
			if op.op == "$inc" {
				return c.put(last, op.arg)
			}
			return c.put(last, query.Arith(op.arg, query.Int32(0), '*'))
		}
		v, ok := cur.(bson.RawValue)
		if !ok || !query.IsNumber(v) {
			return mongoerr.New(mongoerr.TypeMismatch, "Cannot apply %s to a value of non-numeric type. {_id: %s} has the field '%s' of non-numeric type %s",
				op.op, d.get("_id"), last, fromTree(cur).Type)
		}
		sym := byte('+')
		if op.op == "$mul" {
			sym = '*'
		}
		return c.put(last, query.Arith(v, op.arg, sym))
	case "$min", "$max":
		if cur == nil {
			return c.put(last, toTree(op.arg))
		}
		cmp := query.Compare(op.arg, fromTree(cur))
		if (op.op == "$min" && cmp < 0) || (op.op == "$max" && cmp > 0) {
			return c.put(last, toTree(op.arg))
		}
	case "$push", "$addToSet":
		items := []bson.RawValue{op.arg}
		if ad, ok := op.arg.DocumentOK(); ok {
			if each, err := bson.Raw(ad).LookupErr("$each"); err == nil {
				elems, _ := bson.Raw(ad).Elements()
				for _, e := range elems {
					if e.Key() != "$each" {
						return mongoerr.New(mongoerr.NotImplemented, "the %s modifier %s is not implemented by mongosim", op.op, e.Key())
					}
				}
				arr, ok := each.ArrayOK()
				if !ok {
					return mongoerr.New(mongoerr.BadValue, "The argument to $each in %s must be an array but it was of type: %s", op.op, each.Type)
				}
				items, _ = arr.Values()
			}
		}
		var a *marr
		switch t := cur.(type) {
		case nil:
			a = &marr{}
		case *marr:
			a = t
		default:
			return mongoerr.New(mongoerr.BadValue, "The field '%s' must be an array but is of type %s in document {_id: %s}", op.path, fromTree(cur).Type, d.get("_id"))
		}
		for _, it := range items {
			if op.op == "$addToSet" && slices.ContainsFunc(a.vals, func(x any) bool {
				return query.Compare(fromTree(x), it) == 0 && fromTree(x).Type == it.Type || query.Equal(fromTree(x), it)
			}) {
				continue
			}
			a.vals = append(a.vals, toTree(it))
		}
		return c.put(last, a)
	case "$pull":
		if cur == nil {
			return nil
		}
		a, ok := cur.(*marr)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "Cannot apply $pull to a non-array value")
		}
		test, qerr := query.CompileElementTest(op.arg)
		if qerr != nil {
			if me, ok := qerr.(*mongoerr.Error); ok {
				return me
			}
			return mongoerr.New(mongoerr.BadValue, "%v", qerr)
		}
		a.vals = slices.DeleteFunc(a.vals, func(x any) bool { return test(fromTree(x)) })
	case "$rename":
		if cur == nil {
			return nil
		}
		if _, isArr := c.(*marr); isArr {
			return mongoerr.New(mongoerr.BadValue, "The source field cannot be an array element, '%s' in doc with _id: %s has an array field called '%s'", op.path, d.get("_id"), parent[len(parent)-1])
		}
		c.remove(last)
		to := op.arg.StringValue()
		tparts := strings.Split(to, ".")
		tc, err := d.container(tparts[:len(tparts)-1], true)
		if err != nil {
			return err
		}
		if _, isArr := tc.(*marr); isArr {
			return mongoerr.New(mongoerr.BadValue, "The destination field cannot be an array element, '%s' in doc with _id: %s has an array field", to, d.get("_id"))
		}
		return tc.put(tparts[len(tparts)-1], cur)
	}
	return nil
}
