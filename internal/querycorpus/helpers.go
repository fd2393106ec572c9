package querycorpus

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// i32 makes Go ints int32, as a shell's small integer literals are; int64
// and float64 values keep their types.
func i32(v any) any {
	if n, ok := v.(int); ok {
		return int32(n)
	}
	return v
}

// d builds a document from key, value pairs.
func d(kv ...any) bson.D {
	out := make(bson.D, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, bson.E{Key: kv[i].(string), Value: i32(kv[i+1])})
	}
	return out
}

// a builds an array.
func a(vs ...any) bson.A {
	out := make(bson.A, len(vs))
	for i, v := range vs {
		out[i] = i32(v)
	}
	return out
}

func idDocs(ids []int) []bson.D {
	out := make([]bson.D, len(ids))
	for i, id := range ids {
		out[i] = d("_id", id)
	}
	return out
}

func findCmd(filter bson.D, extra ...any) bson.D {
	return append(d("find", Coll, "filter", filter), d(extra...)...)
}

// findIDs: the _ids of the documents a filter matches, as a set.
func findIDs(id, rule string, filter bson.D, ids ...int) Case {
	return Case{ID: id, Rule: rule, Command: findCmd(filter), IDs: true, Want: idDocs(ids)}
}

// nested: like findIDs, on NestedArraySeed.
func nested(id, rule string, filter bson.D, ids ...int) Case {
	c := findIDs(id, rule, filter, ids...)
	c.Seed = NestedArraySeed()
	return c
}

// sortIDs: the _ids in the order a sort returns them.
func sortIDs(id, rule string, filter, sort bson.D, ids ...int) Case {
	return Case{ID: id, Rule: rule, Command: findCmd(filter, "sort", sort), IDs: true, Ordered: true, Want: idDocs(ids)}
}

// project: the documents a projection returns, sorted by _id.
func project(id, rule string, filter, proj bson.D, want ...bson.D) Case {
	return Case{ID: id, Rule: rule, Command: findCmd(filter, "projection", proj, "sort", d("_id", 1)), Ordered: true, Want: want}
}

func findErr(id, rule string, cmd bson.D, code int32, name string) Case {
	return Case{ID: id, Rule: rule, Command: cmd, WantCode: code, WantCodeName: name}
}

func aggCmd(pipeline bson.A) bson.D {
	return d("aggregate", Coll, "pipeline", pipeline, "cursor", d())
}

// agg: an aggregation's output, ordered or as a set.
func agg(id, rule string, ordered bool, pipeline bson.A, want ...bson.D) Case {
	return Case{ID: id, Rule: rule, Command: aggCmd(pipeline), Ordered: ordered, Want: want}
}

func aggErr(id, rule string, pipeline bson.A, code int32, name string) Case {
	return Case{ID: id, Rule: rule, Command: aggCmd(pipeline), WantCode: code, WantCodeName: name}
}

func updCmd(stmts ...bson.D) bson.D {
	arr := bson.A{}
	for _, s := range stmts {
		arr = append(arr, s)
	}
	return d("update", Coll, "updates", arr)
}

// upd: the documents Readback finds after an update on UpdateSeed.
func upd(id, rule string, stmt, readback bson.D, want ...bson.D) Case {
	return Case{ID: id, Rule: rule, Seed: UpdateSeed(), Command: updCmd(stmt), Write: true, Readback: readback, Ordered: true, Want: want}
}

func updErr(id, rule string, stmt bson.D, code int32, name string) Case {
	return Case{ID: id, Rule: rule, Seed: UpdateSeed(), Command: updCmd(stmt), Write: true, WantCode: code, WantCodeName: name}
}

// DefaultSeed is the collection most cases read.
func DefaultSeed() []bson.D {
	return []bson.D{
		d("_id", 1, "name", "ann", "age", 30, "tags", a("x", "y"), "items", a(d("sku", "a", "qty", 5), d("sku", "b", "qty", 9)),
			"address", d("city", "Oslo", "zip", "0150"), "score", 7.5),
		d("_id", 2, "name", "bob", "age", 25, "tags", a("y"), "items", a(d("sku", "c", "qty", 2)), "address", d("city", "Rome"), "score", int64(3)),
		d("_id", 3, "name", "cy", "age", nil, "tags", a(), "items", a(), "score", 10),
		d("_id", 4, "name", "dee", "tags", "x", "address", d("city", "Oslo", "zip", 150), "score", "high"),
		d("_id", 5, "name", "eve", "age", 41, "tags", a("z", "x", "a"), "items", a(d("sku", "a", "qty", 1), d("sku", "d", "qty", 12)), "score", -1),
		d("_id", 6, "name", "fay", "age", int64(30), "tags", a("w"), "score", 2.25, "address", "none"),
	}
}

// NestedArraySeed is the collection of the cases about arrays of arrays,
// kept apart from DefaultSeed so that a server that cannot store nested
// arrays fails only those cases.
func NestedArraySeed() []bson.D {
	return []bson.D{
		d("_id", 1, "tags", a(a("x")), "grid", a(a(1, 2), a(3))),
		d("_id", 2, "tags", a("x", "y"), "grid", a(1, 2, 3)),
		d("_id", 3, "tags", a("x"), "grid", 3),
	}
}

// UpdateSeed is the collection the update cases change.
func UpdateSeed() []bson.D {
	return []bson.D{
		d("_id", 1, "a", 1, "b", d("c", 1), "arr", a(1, 2, 3), "items", a(d("sku", "a", "qty", 5), d("sku", "b", "qty", 9))),
		d("_id", 2, "a", 5, "s", "x"),
	}
}

// seed1 is document 1 of UpdateSeed with fields replaced or added.
func seed1(kv ...any) bson.D {
	return overlay(UpdateSeed()[0], d(kv...))
}

// seed2 is document 2 of UpdateSeed with fields replaced or added.
func seed2(kv ...any) bson.D {
	return overlay(UpdateSeed()[1], d(kv...))
}

func overlay(base, over bson.D) bson.D {
	out := append(bson.D(nil), base...)
	for _, e := range over {
		found := false
		for i := range out {
			if out[i].Key == e.Key {
				out[i].Value, found = e.Value, true
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// windowSeed is what the spill_to_disk and merge_partial_write workloads
// aggregate: partition p, value v.
func windowSeed() []bson.D {
	return []bson.D{
		d("_id", 1, "p", "a", "v", 1), d("_id", 2, "p", "b", "v", 10), d("_id", 3, "p", "a", "v", 2),
		d("_id", 4, "p", "a", "v", 3), d("_id", 5, "p", "b", "v", 20),
	}
}
