package querycorpus

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

const (
	bad     = 2 // BadValue
	badName = "BadValue"
)

// Cases returns the corpus, in a stable order.
func Cases() []Case {
	var cs []Case
	cs = append(cs, filterCases()...)
	cs = append(cs, sortCases()...)
	cs = append(cs, projectionCases()...)
	cs = append(cs, skipLimitCases()...)
	cs = append(cs, updateCases()...)
	cs = append(cs, aggregateCases()...)
	return cs
}

func filterCases() []Case {
	return []Case{
		findIDs("find/eq-scalar", "equality on a scalar field", d("name", "bob"), 2),
		findIDs("find/eq-array-element", "equality matches an array holding the value", d("tags", "x"), 1, 4, 5),
		findIDs("find/eq-whole-array", "equality to an array matches the exact array", d("tags", a("x", "y")), 1),
		findIDs("find/eq-embedded-doc", "equality to a document matches the exact document", d("address", d("city", "Rome")), 2),
		findIDs("find/eq-embedded-doc-order", "document equality is field-order sensitive", d("address", d("zip", "0150", "city", "Oslo"))),
		findIDs("find/dotted-embedded", "dotted path into an embedded document", d("address.city", "Oslo"), 1, 4),
		findIDs("find/dotted-array-subdoc-gt", "dotted path reaches the field in every document of an array", d("items.qty", d("$gt", 8)), 1, 5),
		findIDs("find/dotted-array-subdoc-eq", "dotted path equality through an array of documents", d("items.sku", "a"), 1, 5),
		findIDs("find/positional-index-subdoc", "a numeric path component indexes the array", d("items.0.qty", 5), 1),
		findIDs("find/positional-index-second", "a numeric path component indexes the array", d("items.1.sku", "d"), 5),
		findIDs("find/positional-index-scalar", "a numeric path component indexes an array of scalars", d("tags.0", "z"), 5),
		nested("find/eq-nested-array-element", "equality to an array matches an array equal to it or an element equal to it", d("tags", a("x")), 1, 3),
		nested("find/eq-scalar-not-in-nested-array", "equality to a scalar does not match it inside a nested array", d("tags", "x"), 2, 3),
		nested("find/positional-index-nested-array", "an indexed array element compares as a whole", d("grid.0", a(1, 2)), 1),
		nested("find/no-double-array-expansion", "equality opens one array level only: an element of a nested array does not match", d("grid", 3), 2, 3),
		findIDs("find/gt-across-numeric-types", "numbers compare by value across int32/int64/double", d("age", d("$gt", 26)), 1, 5, 6),
		findIDs("find/eq-across-numeric-types", "30 matches int32 30 and int64 30", d("age", 30), 1, 6),
		findIDs("find/eq-int-matches-long", "an int32 query value matches an int64 field", d("score", 3), 2),
		findIDs("find/gte-double", "range on mixed numeric types", d("score", d("$gte", 7.5)), 1, 3),
		findIDs("find/range-type-bracket-number", "range operators match only values of the query's type bracket", d("score", d("$gt", 0)), 1, 2, 3, 6),
		findIDs("find/range-type-bracket-string", "a string range matches only strings", d("score", d("$gt", "a")), 4),
		findIDs("find/lt", "$lt", d("age", d("$lt", 30)), 2),
		findIDs("find/lte", "$lte across numeric types", d("age", d("$lte", 30)), 1, 2, 6),
		findIDs("find/eq-null-missing", "{f: null} matches null and missing fields", d("age", nil), 3, 4),
		findIDs("find/eq-op-null", "{$eq: null} matches null and missing fields", d("age", d("$eq", nil)), 3, 4),
		findIDs("find/gte-null", "{$gte: null} matches null and missing fields", d("age", d("$gte", nil)), 3, 4),
		findIDs("find/lte-null", "{$lte: null} matches null and missing fields", d("age", d("$lte", nil)), 3, 4),
		findIDs("find/gt-null", "{$gt: null} matches nothing", d("age", d("$gt", nil))),
		findIDs("find/lt-null", "{$lt: null} matches nothing", d("age", d("$lt", nil))),
		findIDs("find/ne-null", "{$ne: null} excludes null and missing fields", d("age", d("$ne", nil)), 1, 2, 5, 6),
		findIDs("find/ne", "$ne matches documents without the value, missing included", d("name", d("$ne", "ann")), 2, 3, 4, 5, 6),
		findIDs("find/ne-array", "$ne excludes arrays holding the value", d("tags", d("$ne", "x")), 2, 3, 6),
		findIDs("find/dotted-null-missing", "a dotted path that reaches nothing (no parent, scalar parent) equals null", d("address.zip", nil), 2, 3, 5, 6),
		findIDs("find/in", "$in matches any listed value", d("name", d("$in", a("ann", "eve", "zed"))), 1, 5),
		findIDs("find/in-array-field", "$in matches arrays holding any listed value", d("tags", d("$in", a("z", "q"))), 5),
		findIDs("find/in-null", "$in with null matches null and missing", d("age", d("$in", a(nil, 25))), 2, 3, 4),
		findIDs("find/nin", "$nin matches documents holding none of the values", d("tags", d("$nin", a("x", "y"))), 3, 6),
		findIDs("find/exists-true", "$exists: true matches fields holding any value, null included", d("age", d("$exists", true)), 1, 2, 3, 5, 6),
		findIDs("find/exists-false", "$exists: false matches missing fields", d("age", d("$exists", false)), 4),
		findIDs("find/exists-dotted", "$exists on a dotted path", d("address.zip", d("$exists", true)), 1, 4),
		findIDs("find/exists-through-array", "$exists through an array of documents", d("items.sku", d("$exists", true)), 1, 2, 5),
		findIDs("find/and", "$and of conditions", d("$and", a(d("age", d("$gte", 25)), d("age", d("$lt", 35)))), 1, 2, 6),
		findIDs("find/or", "$or of conditions", d("$or", a(d("name", "ann"), d("tags", "z"))), 1, 5),
		findIDs("find/nor", "$nor matches documents failing every condition", d("$nor", a(d("tags", "x"), d("age", nil))), 2, 6),
		findIDs("find/not", "$not matches documents where the condition fails, missing fields included", d("age", d("$not", d("$gt", 26))), 2, 3, 4),
		findIDs("find/two-operators", "several operators on one field are ANDed", d("age", d("$gt", 20, "$lt", 30)), 2),
		findIDs("find/type-string", "$type by alias", d("score", d("$type", "string")), 4),
		findIDs("find/type-number", "$type number matches every numeric type", d("score", d("$type", "number")), 1, 2, 3, 5, 6),
		findIDs("find/type-long", "$type long", d("age", d("$type", "long")), 6),
		findIDs("find/type-array", "$type array matches array fields, empty ones included", d("tags", d("$type", "array")), 1, 2, 3, 5, 6),
		findIDs("find/type-null", "$type null matches null, not missing", d("age", d("$type", "null")), 3),
		findIDs("find/type-code-int", "$type by number (16 int)", d("score", d("$type", 16)), 3, 5),
		findIDs("find/type-code-double", "$type by number (1 double)", d("score", d("$type", 1)), 1, 6),
		findIDs("find/size", "$size matches arrays of that length", d("tags", d("$size", 2)), 1),
		findIDs("find/size-zero", "$size 0 matches empty arrays", d("tags", d("$size", 0)), 3),
		findIDs("find/size-one", "$size counts top-level elements; scalars never match", d("tags", d("$size", 1)), 2, 6),
		findIDs("find/all", "$all matches arrays holding every value", d("tags", d("$all", a("x", "y"))), 1),
		findIDs("find/all-scalar", "$all of one value matches a scalar equal to it", d("tags", d("$all", a("x"))), 1, 4, 5),
		findIDs("find/all-empty", "$all of an empty array matches nothing", d("tags", d("$all", a()))),
		findIDs("find/elemmatch", "$elemMatch requires one element to satisfy every condition", d("items", d("$elemMatch", d("sku", "a", "qty", d("$gt", 4)))), 1),
		findIDs("find/no-elemmatch-across-elements", "without $elemMatch, conditions on dotted paths may be met by different elements", d("items.sku", "a", "items.qty", d("$gt", 4)), 1, 5),
		findIDs("find/elemmatch-operators", "$elemMatch with operators tests scalar elements", d("tags", d("$elemMatch", d("$gte", "y"))), 1, 2, 5),
		findIDs("find/mod", "$mod [divisor, remainder] (doubles truncated)", d("score", d("$mod", a(5, 0))), 3),
		findIDs("find/id-in", "$in on _id", d("_id", d("$in", a(1, 3))), 1, 3),
		findIDs("find/empty-filter", "an empty filter matches everything", d(), 1, 2, 3, 4, 5, 6),
		findErr("find/error-unknown-operator", "an unknown field operator is BadValue", findCmd(d("age", d("$foo", 1))), bad, badName),
		findErr("find/error-unknown-top-operator", "an unknown top-level operator is BadValue", findCmd(d("$foo", 1)), bad, badName),
		findErr("find/error-in-not-array", "$in needs an array", findCmd(d("age", d("$in", 5))), bad, badName),
		findErr("find/error-size-negative", "$size may not be negative", findCmd(d("tags", d("$size", -1))), bad, badName),
		findErr("find/error-and-empty", "$and must be a nonempty array", findCmd(d("$and", a())), bad, badName),
		findErr("find/error-type-alias", "an unknown $type alias is BadValue", findCmd(d("age", d("$type", "nosuch"))), bad, badName),
		findErr("find/error-not-scalar", "$not needs a regex or a document", findCmd(d("age", d("$not", 5))), bad, badName),
		findErr("find/error-elemmatch-scalar", "$elemMatch needs an object", findCmd(d("items", d("$elemMatch", 5))), bad, badName),
		findErr("find/error-mod-malformed", "$mod needs two numbers", findCmd(d("score", d("$mod", a(5)))), bad, badName),
	}
}

func sortCases() []Case {
	mixed := []bson.D{
		d("_id", 1, "v", "a"), d("_id", 2, "v", d("x", 1)), d("_id", 3, "v", true), d("_id", 4, "v", 5),
		d("_id", 5, "v", nil), d("_id", 6, "v", bson.ObjectID{1}), d("_id", 7, "v", bson.NewDateTimeFromTime(time.Unix(0, 0))),
	}
	empty := []bson.D{d("_id", 1, "v", nil), d("_id", 2), d("_id", 3, "v", a()), d("_id", 4, "v", 0)}
	lte5 := d("_id", d("$lte", 5))
	withItems := d("items.qty", d("$exists", true))
	return []Case{
		sortIDs("sort/null-missing-together", "missing sorts as null; ties broken by the next key", d(), d("age", 1, "_id", 1), 3, 4, 2, 1, 6, 5),
		sortIDs("sort/desc", "descending sort; null and missing last", d(), d("age", -1, "_id", 1), 5, 1, 6, 2, 3, 4),
		sortIDs("sort/numbers-then-strings", "BSON order: numbers (by value across types) before strings", d(), d("score", 1), 5, 6, 2, 1, 3, 4),
		sortIDs("sort/numbers-then-strings-desc", "descending BSON order", d(), d("score", -1), 4, 3, 1, 2, 6, 5),
		sortIDs("sort/array-asc-min", "ascending sort keys an array by its smallest element; an empty array sorts first", lte5, d("tags", 1, "_id", 1), 3, 5, 1, 4, 2),
		sortIDs("sort/array-desc-max", "descending sort keys an array by its largest element", lte5, d("tags", -1, "_id", 1), 5, 1, 2, 4, 3),
		sortIDs("sort/dotted-array-asc", "a dotted path through an array sorts by the smallest value reached", withItems, d("items.qty", 1), 5, 2, 1),
		sortIDs("sort/dotted-array-desc", "a dotted path through an array sorts descending by the largest value reached", withItems, d("items.qty", -1), 5, 1, 2),
		sortIDs("sort/string-desc", "strings sort by binary comparison", d(), d("name", -1), 6, 5, 4, 3, 2, 1),
		sortIDs("sort/multi-key", "compound sort; missing and scalar parents read as null", d(), d("address.city", 1, "name", -1), 6, 5, 3, 4, 1, 2),
		{ID: "sort/bson-type-order", Rule: "null < numbers < strings < objects < ObjectId < bool < date", Seed: mixed,
			Command: findCmd(d(), "sort", d("v", 1)), IDs: true, Ordered: true, Want: idDocs([]int{5, 4, 1, 2, 6, 3, 7})},
		{ID: "sort/empty-array-below-null", Rule: "an empty array sorts below null and missing", Seed: empty,
			Command: findCmd(d(), "sort", d("v", 1, "_id", 1)), IDs: true, Ordered: true, Want: idDocs([]int{3, 1, 2, 4})},
		findErr("sort/error-bad-direction", "a sort direction must be 1 or -1", findCmd(d(), "sort", d("age", 2)), 15975, "Location15975"),
	}
}

func projectionCases() []Case {
	one, two := d("_id", 1), d("_id", 2)
	return []Case{
		project("project/include", "inclusion keeps _id and the named fields", d("_id", d("$lte", 2)), d("name", 1),
			d("_id", 1, "name", "ann"), d("_id", 2, "name", "bob")),
		project("project/include-document-order", "included fields keep the document's order", one, d("score", 1, "name", 1),
			d("_id", 1, "name", "ann", "score", 7.5)),
		project("project/id-only", "{_id: 1} returns only _id", one, d("_id", 1), d("_id", 1)),
		project("project/exclude-id-only", "{_id: 0} returns everything but _id", two, d("_id", 0),
			d("name", "bob", "age", 25, "tags", a("y"), "items", a(d("sku", "c", "qty", 2)), "address", d("city", "Rome"), "score", int64(3))),
		project("project/exclude", "exclusion drops the named fields", two, d("items", 0, "address", 0, "tags", 0),
			d("_id", 2, "name", "bob", "age", 25, "score", int64(3))),
		project("project/include-without-id", "_id: 0 may accompany an inclusion", d("_id", d("$lte", 2)), d("_id", 0, "name", 1),
			d("name", "ann"), d("name", "bob")),
		project("project/exclude-with-id", "_id: 1 may accompany an exclusion", two, d("_id", 1, "name", 0, "tags", 0, "items", 0, "address", 0, "score", 0),
			d("_id", 2, "age", 25)),
		project("project/dotted-include", "a dotted inclusion emits the nested document, not a dotted key", d("_id", d("$in", a(1, 2, 3, 6))), d("address.city", 1),
			d("_id", 1, "address", d("city", "Oslo")), d("_id", 2, "address", d("city", "Rome")), d("_id", 3), d("_id", 6)),
		project("project/dotted-include-array", "a dotted inclusion projects each document of an array", d("_id", d("$in", a(1, 3))), d("items.qty", 1),
			d("_id", 1, "items", a(d("qty", 5), d("qty", 9))), d("_id", 3, "items", a())),
		project("project/nested-include", "a nested projection document is a dotted inclusion", one, d("address", d("city", 1)),
			d("_id", 1, "address", d("city", "Oslo"))),
		project("project/dotted-exclude", "a dotted exclusion removes the nested field", one, d("address.zip", 0),
			d("_id", 1, "name", "ann", "age", 30, "tags", a("x", "y"), "items", a(d("sku", "a", "qty", 5), d("sku", "b", "qty", 9)), "address", d("city", "Oslo"), "score", 7.5)),
		project("project/dotted-exclude-array", "a dotted exclusion applies in each document of an array", d("_id", 5), d("items.sku", 0, "_id", 0, "name", 0, "age", 0, "tags", 0),
			d("items", a(d("qty", 1), d("qty", 12)), "score", -1)),
		project("project/computed", "a find projection may compute a field from an expression", one, d("n", "$name"), d("_id", 1, "n", "ann")),
		findErr("project/error-unknown-expression", "an unknown $-operator as a projection field is 31325 (4.4+)", findCmd(d(), "projection", d("x", d("$foo", 1))), 31325, "Location31325"),
		findErr("project/error-exclusion-in-inclusion", "exclusion in an inclusion projection is 31254", findCmd(d(), "projection", d("name", 1, "age", 0)), 31254, "Location31254"),
		findErr("project/error-inclusion-in-exclusion", "inclusion in an exclusion projection is 31253", findCmd(d(), "projection", d("name", 0, "age", 1)), 31253, "Location31253"),
	}
}

func skipLimitCases() []Case {
	return []Case{
		{ID: "find/skip-limit", Rule: "skip then limit, after the sort", Command: findCmd(d(), "sort", d("_id", 1), "skip", 2, "limit", 2),
			IDs: true, Ordered: true, Want: idDocs([]int{3, 4})},
		{ID: "find/limit-zero", Rule: "limit 0 means no limit", Command: findCmd(d(), "limit", 0), IDs: true, Want: idDocs([]int{1, 2, 3, 4, 5, 6})},
		{ID: "find/skip-beyond", Rule: "skipping past the end returns nothing", Command: findCmd(d(), "skip", 10), IDs: true, Want: []bson.D{}},
		findErr("find/error-negative-skip", "the find command's skip must be >= 0", findCmd(d(), "skip", -1), 51024, "Location51024"),
		findErr("find/error-negative-limit", "the find command's limit must be >= 0 (drivers send a negative limit as limit plus singleBatch)", findCmd(d(), "limit", -2), 51024, "Location51024"),
		agg("agg/skip-limit", "$sort, $skip, $limit in order", true, a(d("$sort", d("_id", 1)), d("$skip", 2), d("$limit", 2), d("$project", d("_id", 1))), d("_id", 3), d("_id", 4)),
		aggErr("agg/error-limit-zero", "$limit must be positive", a(d("$limit", 0)), 15958, "Location15958"),
		aggErr("agg/error-limit-negative", "a $limit that is not a non-negative integer is 5107201 (5.0+); only 0 is 15958", a(d("$limit", -1)), 5107201, "Location5107201"),
		aggErr("agg/error-limit-fraction", "a $limit must be an integer (5107201)", a(d("$limit", 1.5)), 5107201, "Location5107201"),
		aggErr("agg/error-skip-negative", "a negative $skip is 5107200 (5.0+)", a(d("$skip", -1)), 5107200, "Location5107200"),
		aggErr("agg/error-skip-string", "a $skip that is not a number is 5107200 (5.0+)", a(d("$skip", "x")), 5107200, "Location5107200"),
	}
}

func stmt(kv ...any) bson.D { return d(kv...) }

func updateCases() []Case {
	q1, q2 := d("_id", 1), d("_id", 2)
	return []Case{
		upd("update/set-new-fields-ordered", "$set appends new fields in field-name order (5.0+)", stmt("q", q2, "u", d("$set", d("z", 1, "m", 2))), q2, seed2("m", 2, "z", 1)),
		upd("update/set-dotted-existing", "$set on a dotted path changes the nested field", stmt("q", q1, "u", d("$set", d("b.c", 2))), q1, seed1("b", d("c", 2))),
		upd("update/set-dotted-create", "$set on a dotted path creates the nested documents", stmt("q", q2, "u", d("$set", d("x.y.z", 1))), q2, seed2("x", d("y", d("z", 1)))),
		upd("update/set-array-index", "$set on an array position replaces that element", stmt("q", q1, "u", d("$set", d("arr.1", 20))), q1, seed1("arr", a(1, 20, 3))),
		upd("update/set-array-index-pads", "$set past an array's end pads with null", stmt("q", q1, "u", d("$set", d("arr.4", 9))), q1, seed1("arr", a(1, 2, 3, nil, 9))),
		updErr("update/error-set-through-scalar", "a path through a scalar is PathNotViable", stmt("q", q2, "u", d("$set", d("a.b", 1))), 28, "PathNotViable"),
		upd("update/unset", "$unset removes the field", stmt("q", q2, "u", d("$unset", d("s", ""))), q2, d("_id", 2, "a", 5)),
		upd("update/unset-dotted", "$unset on a dotted path removes the nested field", stmt("q", q1, "u", d("$unset", d("b.c", 1))), q1, seed1("b", d())),
		{ID: "update/inc-int32", Rule: "$inc of int32 by int32 stays int32", Seed: UpdateSeed(), Command: updCmd(stmt("q", q2, "u", d("$inc", d("a", 2)))),
			Write: true, Readback: q2, Ordered: true, Canonical: true, Want: []bson.D{seed2("a", 7)}},
		upd("update/inc-missing", "$inc of a missing field sets it", stmt("q", q2, "u", d("$inc", d("n", 5))), q2, seed2("n", 5)),
		upd("update/inc-double", "$inc by a double makes a double", stmt("q", q2, "u", d("$inc", d("a", 0.5))), q2, seed2("a", 5.5)),
		upd("update/inc-dotted-create", "$inc creates a nested field", stmt("q", q1, "u", d("$inc", d("b.d", 1))), q1, seed1("b", d("c", 1, "d", 1))),
		updErr("update/error-inc-string", "$inc of a string is TypeMismatch", stmt("q", q2, "u", d("$inc", d("s", 1))), 14, "TypeMismatch"),
		updErr("update/error-inc-non-numeric-arg", "$inc needs a numeric argument", stmt("q", q2, "u", d("$inc", d("a", "x"))), 14, "TypeMismatch"),
		{ID: "update/mul-int32", Rule: "$mul of int32 by int32 stays int32", Seed: UpdateSeed(), Command: updCmd(stmt("q", q2, "u", d("$mul", d("a", 3)))),
			Write: true, Readback: q2, Ordered: true, Canonical: true, Want: []bson.D{seed2("a", 15)}},
		{ID: "update/mul-missing", Rule: "$mul of a missing field sets 0 of the multiplier's type", Seed: UpdateSeed(), Command: updCmd(stmt("q", q2, "u", d("$mul", d("n", 3)))),
			Write: true, Readback: q2, Ordered: true, Canonical: true, Want: []bson.D{seed2("n", 0)}},
		upd("update/min-lower", "$min replaces with a lower value", stmt("q", q2, "u", d("$min", d("a", 3))), q2, seed2("a", 3)),
		upd("update/min-higher", "$min keeps a lower current value", stmt("q", q2, "u", d("$min", d("a", 10))), q2, seed2()),
		upd("update/max", "$max replaces with a higher value", stmt("q", q2, "u", d("$max", d("a", 10))), q2, seed2("a", 10)),
		upd("update/push", "$push appends", stmt("q", q1, "u", d("$push", d("arr", 4))), q1, seed1("arr", a(1, 2, 3, 4))),
		upd("update/push-each", "$push $each appends each value", stmt("q", q1, "u", d("$push", d("arr", d("$each", a(4, 5))))), q1, seed1("arr", a(1, 2, 3, 4, 5))),
		upd("update/push-missing", "$push to a missing field creates the array", stmt("q", q2, "u", d("$push", d("new", 1))), q2, seed2("new", a(1))),
		updErr("update/error-push-non-array", "$push to a non-array is BadValue", stmt("q", q2, "u", d("$push", d("a", 1))), bad, badName),
		upd("update/addtoset-present", "$addToSet does not add a present value", stmt("q", q1, "u", d("$addToSet", d("arr", 2))), q1, seed1()),
		upd("update/addtoset-each", "$addToSet $each adds each absent value once", stmt("q", q1, "u", d("$addToSet", d("arr", d("$each", a(3, 4, 4))))), q1, seed1("arr", a(1, 2, 3, 4))),
		upd("update/pull-value", "$pull removes equal elements", stmt("q", q1, "u", d("$pull", d("arr", 2))), q1, seed1("arr", a(1, 3))),
		upd("update/pull-condition", "$pull with operators removes matching elements", stmt("q", q1, "u", d("$pull", d("arr", d("$gte", 2)))), q1, seed1("arr", a(1))),
		upd("update/pull-subdoc-query", "$pull with a document applies it as a query to each element", stmt("q", q1, "u", d("$pull", d("items", d("sku", "a")))), q1, seed1("items", a(d("sku", "b", "qty", 9)))),
		upd("update/rename", "$rename moves the value; the new field is appended", stmt("q", q2, "u", d("$rename", d("s", "t"))), q2, d("_id", 2, "a", 5, "t", "x")),
		upd("update/rename-dotted", "$rename out of an embedded document", stmt("q", q1, "u", d("$rename", d("b.c", "d"))), q1, overlay(seed1("b", d()), d("d", 1))),
		updErr("update/error-conflict-same-path", "two operators on one path are ConflictingUpdateOperators", stmt("q", q2, "u", d("$set", d("a", 1), "$inc", d("a", 1))), 40, "ConflictingUpdateOperators"),
		updErr("update/error-conflict-prefix", "a path and a path below it conflict", stmt("q", q1, "u", d("$set", d("b", 1), "$unset", d("b.c", 1))), 40, "ConflictingUpdateOperators"),
		updErr("update/error-change-id", "changing _id is ImmutableField", stmt("q", q2, "u", d("$set", d("_id", 5))), 66, "ImmutableField"),
		upd("update/set-same-id", "setting _id to its own value is allowed", stmt("q", q2, "u", d("$set", d("_id", 2, "a", 6))), q2, seed2("a", 6)),
		upd("update/replace-keeps-id", "a replacement keeps the document's _id", stmt("q", q2, "u", d("x", 1)), q2, d("_id", 2, "x", 1)),
		updErr("update/error-replace-other-id", "a replacement with another _id is ImmutableField", stmt("q", q2, "u", d("_id", 3, "x", 1)), 66, "ImmutableField"),
		upd("update/upsert", "an upsert inserts the query's equality fields plus the update", stmt("q", d("_id", 9, "k", "v"), "u", d("$set", d("n", 1)), "upsert", true), d("_id", 9), d("_id", 9, "k", "v", "n", 1)),
		upd("update/upsert-setoninsert", "$setOnInsert applies on the upsert's insert", stmt("q", d("_id", 9), "u", d("$set", d("a", 1), "$setOnInsert", d("created", true)), "upsert", true), d("_id", 9), d("_id", 9, "a", 1, "created", true)),
		upd("update/setoninsert-on-match", "$setOnInsert does nothing when the query matched", stmt("q", q2, "u", d("$setOnInsert", d("c", 1)), "upsert", true), q2, seed2()),
		upd("update/multi", "multi: true updates every match", stmt("q", d(), "u", d("$set", d("m", 1)), "multi", true), d(), seed1("m", 1), seed2("m", 1)),
		{ID: "update/single", Rule: "without multi only one matching document is updated", Seed: UpdateSeed(), Command: updCmd(stmt("q", d(), "u", d("$set", d("m", 1)))),
			Write: true, Readback: d("m", 1), IDs: true, Want: idDocs([]int{1})},
		upd("update/positional", "$ in a path is the array element the query matched", stmt("q", d("_id", 1, "items.sku", "b"), "u", d("$set", d("items.$.qty", 0))), q1,
			seed1("items", a(d("sku", "a", "qty", 5), d("sku", "b", "qty", 0)))),
		updErr("update/error-positional-no-match", "$ without a query condition on the array is BadValue", stmt("q", q1, "u", d("$set", d("items.$.qty", 0))), bad, badName),
		updErr("update/error-unknown-modifier", "an unknown update operator is FailedToParse", stmt("q", q2, "u", d("$foo", d("a", 1))), 9, "FailedToParse"),
		updErr("update/error-modifier-not-doc", "an update operator needs a document", stmt("q", q2, "u", d("$set", 1)), 9, "FailedToParse"),
	}
}

func aggregateCases() []Case {
	wseed := windowSeed()
	window := d("$setWindowFields", d("partitionBy", "$p", "sortBy", d("_id", 1),
		"output", d("run", d("$sum", "$v", "window", d("documents", a("unbounded", "current"))))))
	whole := d("$setWindowFields", d("sortBy", d("_id", 1), "output", d("run", d("$sum", "$v"))))
	withRun := func(runs ...int) []bson.D {
		out := make([]bson.D, len(wseed))
		for i, s := range wseed {
			out[i] = overlay(s, d("run", runs[i]))
		}
		return out
	}
	cs := []Case{
		{ID: "agg/project-multiply-int32", Rule: "$multiply of int32s stays int32", Canonical: true, Ordered: true,
			Command: aggCmd(a(d("$match", d("_id", d("$lte", 2))), d("$sort", d("_id", 1)), d("$project", d("name", 1, "double", d("$multiply", a("$age", 2)))))),
			Want:    []bson.D{d("_id", 1, "name", "ann", "double", 60), d("_id", 2, "name", "bob", "double", 50)}},
		{ID: "agg/multiply-long", Rule: "$multiply with an int64 makes int64", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", 6)), d("$project", d("_id", 0, "v", d("$multiply", a("$age", 2)))))), Want: []bson.D{d("v", int64(60))}},
		{ID: "agg/multiply-int32-overflow", Rule: "$multiply overflowing int32 makes int64", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", 1)), d("$project", d("_id", 0, "v", d("$multiply", a(2000000000, 2)))))), Want: []bson.D{d("v", int64(4000000000))}},
		{ID: "agg/multiply-double", Rule: "$multiply with a double makes a double", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", 1)), d("$project", d("_id", 0, "v", d("$multiply", a("$score", 2)))))), Want: []bson.D{d("v", 15.0)}},
		{ID: "agg/add-subtract-int32", Rule: "$add and $subtract of int32s stay int32", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", 1)), d("$project", d("_id", 0, "s", d("$add", a("$age", 1, 2)), "d", d("$subtract", a("$age", 5)))))), Want: []bson.D{d("s", 33, "d", 25)}},
		agg("agg/multiply-missing-null", "arithmetic on a missing field is null", false, a(d("$match", d("_id", 4)), d("$project", d("v", d("$multiply", a("$age", 2))))), d("_id", 4, "v", nil)),
		aggErr("agg/error-multiply-string", "$multiply of a string is TypeMismatch (current mongod; 4.x said 16555)", a(d("$match", d("_id", 4)), d("$project", d("v", d("$multiply", a("$score", 2))))), 14, "TypeMismatch"),
		agg("agg/project-array-path", "a field path through an array of documents yields an array", false, a(d("$match", d("_id", 1)), d("$project", d("_id", 0, "q", "$items.qty"))), d("q", a(5, 9))),
		agg("agg/group-count-by-city", "$group by a dotted path; missing groups under null", false, a(d("$group", d("_id", "$address.city", "n", d("$sum", 1)))),
			d("_id", nil, "n", 3), d("_id", "Oslo", "n", 2), d("_id", "Rome", "n", 1)),
		agg("agg/group-sum-mixed", "$sum over int64 and double is a double", false, a(d("$match", d("_id", d("$in", a(1, 2)))), d("$group", d("_id", nil, "t", d("$sum", "$score")))), d("_id", nil, "t", 10.5)),
		{ID: "agg/group-sum-int32", Rule: "$sum of int32s is int32", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", d("$in", a(1, 2)))), d("$group", d("_id", nil, "t", d("$sum", "$age"))))), Want: []bson.D{d("_id", nil, "t", 55)}},
		{ID: "agg/group-sum-long", Rule: "$sum with an int64 is int64", Canonical: true,
			Command: aggCmd(a(d("$match", d("_id", d("$in", a(1, 6)))), d("$group", d("_id", nil, "t", d("$sum", "$age"))))), Want: []bson.D{d("_id", nil, "t", int64(60))}},
		agg("agg/group-avg", "$avg ignores null and missing and returns a double", false, a(d("$group", d("_id", nil, "m", d("$avg", "$age")))), d("_id", nil, "m", 31.5)),
		agg("agg/group-min-max", "$min/$max ignore null and missing", false, a(d("$group", d("_id", nil, "lo", d("$min", "$age"), "hi", d("$max", "$age")))), d("_id", nil, "lo", 25, "hi", 41)),
		agg("agg/group-push", "$push collects values in input order", false, a(d("$match", d("_id", d("$lte", 3))), d("$sort", d("_id", 1)), d("$group", d("_id", nil, "names", d("$push", "$name")))),
			d("_id", nil, "names", a("ann", "bob", "cy"))),
		agg("agg/group-count", "$count accumulator counts documents", false, a(d("$group", d("_id", nil, "n", d("$count", d())))), d("_id", nil, "n", 6)),
		agg("agg/group-two-sums", "several accumulators in one $group each compute", false, a(d("$group", d("_id", nil, "a", d("$sum", 1), "b", d("$sum", "$age")))), d("_id", nil, "a", 6, "b", int64(126))),
		agg("agg/sort-limit", "$sort then $limit", true, a(d("$sort", d("age", -1, "_id", 1)), d("$limit", 2), d("$project", d("_id", 1))), d("_id", 5), d("_id", 1)),
		agg("agg/unwind", "$unwind emits one document per element", true, a(d("$match", d("_id", 1)), d("$unwind", "$tags"), d("$project", d("tags", 1))), d("_id", 1, "tags", "x"), d("_id", 1, "tags", "y")),
		agg("agg/unwind-drops-empty", "$unwind drops missing, null and empty arrays", false, a(d("$unwind", "$items"), d("$count", "n")), d("n", 5)),
		agg("agg/unwind-preserve", "preserveNullAndEmptyArrays keeps them", false, a(d("$unwind", d("path", "$items", "preserveNullAndEmptyArrays", true)), d("$count", "n")), d("n", 8)),
		agg("agg/unwind-scalar", "$unwind of a non-array treats it as one element", false, a(d("$match", d("_id", 4)), d("$unwind", "$tags"), d("$project", d("tags", 1))), d("_id", 4, "tags", "x")),
		agg("agg/count", "$count outputs one document with the count", false, a(d("$match", d("age", d("$gte", 30))), d("$count", "n")), d("n", 3)),
		agg("agg/count-nothing", "$count of no documents outputs nothing", false, a(d("$match", d("_id", 99)), d("$count", "n"))),
		agg("agg/addfields", "$addFields replaces in place and creates nested fields", false,
			a(d("$match", d("_id", 2)), d("$addFields", d("age", d("$add", a("$age", 1)), "address.zip", "00100")), d("$project", d("age", 1, "address", 1))),
			d("_id", 2, "age", 26, "address", d("city", "Rome", "zip", "00100"))),
		agg("agg/set-stage", "$set is $addFields", false, a(d("$match", d("_id", 3)), d("$set", d("k", "$name")), d("$project", d("k", 1))), d("_id", 3, "k", "cy")),
		{ID: "agg/setwindowfields-running-sum", Rule: "$setWindowFields running $sum per partition (spill_to_disk workload)", Seed: wseed,
			Command: aggCmd(a(window)), Want: withRun(1, 10, 3, 6, 30)},
		{ID: "agg/setwindowfields-whole", Rule: "$setWindowFields without a window sums the whole partition", Seed: wseed,
			Command: aggCmd(a(whole)), Want: withRun(36, 36, 36, 36, 36)},
		{ID: "agg/merge-window", Rule: "$merge inserts the pipeline's output (merge_partial_write workload)", Seed: wseed, Write: true, ReadOut: true, Ordered: true,
			Command: aggCmd(a(whole, d("$merge", d("into", OutColl)))), Want: withRun(36, 36, 36, 36, 36)},
		// $ifNull and the $group/$project shapes mongosh's sh.status() runs
		// over config.chunks and config.changelog.
		agg("agg/ifnull-missing", "$ifNull replaces a missing field", false, a(d("$match", d("_id", 4)), d("$project", d("_id", 0, "v", d("$ifNull", a("$age", "none"))))), d("v", "none")),
		agg("agg/ifnull-null", "$ifNull replaces a null field", false, a(d("$match", d("_id", 3)), d("$project", d("_id", 0, "v", d("$ifNull", a("$age", "none"))))), d("v", "none")),
		agg("agg/ifnull-empty-array-kept", "$ifNull keeps a non-null value, an empty array included", false, a(d("$match", d("_id", 3)), d("$project", d("_id", 0, "v", d("$ifNull", a("$tags", "none"))))), d("v", a())),
		agg("agg/ifnull-first-non-null", "$ifNull with several inputs returns the first non-null one (5.0+)", false,
			a(d("$match", d("_id", 4)), d("$project", d("_id", 0, "v", d("$ifNull", a("$age", "$address.zip", "none"))))), d("v", 150)),
		agg("agg/ifnull-replacement-missing", "$ifNull returns the replacement as it is: a missing replacement leaves the field out", false,
			a(d("$match", d("_id", 4)), d("$project", d("_id", 0, "name", 1, "v", d("$ifNull", a("$age", "$nosuch"))))), d("name", "dee")),
		agg("agg/ifnull-lazy", "$ifNull does not evaluate the replacement when the input is not null", false,
			a(d("$match", d("_id", 4)), d("$project", d("_id", 0, "v", d("$ifNull", a("$name", d("$multiply", a("$score", 2))))))), d("v", "dee")),
		agg("agg/ifnull-group-id-field", "$ifNull over a field of a $group _id document (a missing group field leaves it out of _id)", false,
			a(d("$group", d("_id", d("c", "$address.city"), "count", d("$sum", 1))), d("$project", d("_id", d("$ifNull", a("$_id.c", "nowhere")), "count", "$count"))),
			d("_id", "nowhere", "count", 3), d("_id", "Oslo", "count", 2), d("_id", "Rome", "count", 1)),
		agg("agg/group-project-rename-sort", "$project renames $group's _id and accumulator ($_id null for missing keys), then $sort orders null first", true,
			a(d("$group", d("_id", "$address.city", "cnt", d("$sum", 1))), d("$project", d("_id", 0, "city", "$_id", "n", "$cnt")), d("$sort", d("city", 1))),
			d("city", nil, "n", 3), d("city", "Oslo", "n", 2), d("city", "Rome", "n", 1)),
		aggErr("agg/error-ifnull-one-arg", "$ifNull needs at least two arguments (1257300)", a(d("$project", d("v", d("$ifNull", a("$age"))))), 1257300, "Location1257300"),
		aggErr("agg/error-ifnull-not-array", "a single non-array $ifNull argument is one argument (1257300)", a(d("$project", d("v", d("$ifNull", "$age")))), 1257300, "Location1257300"),
		aggErr("agg/error-sharded-data-distribution-not-router", "$shardedDataDistribution runs only on a router (6789101)", a(d("$shardedDataDistribution", d())), 6789101, "Location6789101"),
		aggErr("agg/error-merge-not-last", "$merge must be the last stage", a(d("$merge", d("into", OutColl)), d("$match", d())), 40601, "Location40601"),
		aggErr("agg/error-unknown-stage", "an unknown stage is 40324", a(d("$foo", d())), 40324, "Location40324"),
		aggErr("agg/error-unknown-expression", "an unknown expression as a $project field is the projection parser's 31325 (4.4+)", a(d("$project", d("x", d("$foo", 1)))), 31325, "Location31325"),
		aggErr("agg/error-unknown-expression-addfields", "an unknown expression in $addFields is InvalidPipelineOperator", a(d("$addFields", d("x", d("$foo", 1)))), 168, "InvalidPipelineOperator"),
		aggErr("agg/error-unknown-expression-nested", "an unknown expression inside an expression is InvalidPipelineOperator", a(d("$project", d("x", d("$add", a(d("$foo", 1), 1))))), 168, "InvalidPipelineOperator"),
		aggErr("agg/error-group-no-id", "$group needs an _id", a(d("$group", d("n", d("$sum", 1)))), 15955, "Location15955"),
		aggErr("agg/error-unknown-accumulator", "an unknown accumulator is 15952", a(d("$group", d("_id", nil, "x", d("$foo", 1)))), 15952, "Location15952"),
		aggErr("agg/error-sort-direction", "a $sort direction must be 1 or -1", a(d("$sort", d("a", 0))), 15975, "Location15975"),
		aggErr("agg/error-project-empty", "$project needs at least one field", a(d("$project", d())), 51272, "Location51272"),
		aggErr("agg/error-unwind-no-dollar", "an $unwind path must start with $", a(d("$unwind", "tags")), 28818, "Location28818"),
		aggErr("agg/error-count-dollar", "a $count name cannot start with $", a(d("$count", "$n")), 40158, "Location40158"),
		aggErr("agg/error-stage-two-fields", "a stage object has exactly one field", a(d("$match", d(), "$limit", 1)), 40323, "Location40323"),
		aggErr("agg/error-project-mixed", "exclusion in an inclusion $project is 31254", a(d("$project", d("a", 1, "b", 0))), 31254, "Location31254"),
	}
	return cs
}
