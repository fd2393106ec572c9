package mongosim

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/mongosim/query"
)

// collection keeps a collection's documents in insertion order with an _id
// index. Deleted slots are compacted lazily.
type collection struct {
	docs  []bson.Raw // nil entries are deleted
	byID  map[string]int
	count int
}

func newCollection() *collection { return &collection{byID: map[string]int{}} }

// idKey is the _id index key: the value's type bracket and bytes, with
// numbers normalised so 1 and 1.0 collide as they do in mongod.
func idKey(v bson.RawValue) string {
	if query.IsNumber(v) {
		return "n" + bson.RawValue(query.Double(query.Float(v))).String()
	}
	return string(rune(v.Type)) + string(v.Value)
}

func (c *collection) get(id bson.RawValue) (bson.Raw, bool) {
	i, ok := c.byID[idKey(id)]
	if !ok {
		return nil, false
	}
	return c.docs[i], true
}

// put inserts or replaces the document with doc's _id.
func (c *collection) put(doc bson.Raw) {
	k := idKey(doc.Lookup("_id"))
	if i, ok := c.byID[k]; ok {
		c.docs[i] = doc
		return
	}
	c.byID[k] = len(c.docs)
	c.docs = append(c.docs, doc)
	c.count++
}

func (c *collection) remove(id bson.RawValue) bool {
	k := idKey(id)
	i, ok := c.byID[k]
	if !ok {
		return false
	}
	delete(c.byID, k)
	c.docs[i] = nil
	c.count--
	if len(c.docs) > 64 && c.count < len(c.docs)/2 {
		c.compact()
	}
	return true
}

func (c *collection) compact() {
	live := make([]bson.Raw, 0, c.count)
	for _, d := range c.docs {
		if d != nil {
			c.byID[idKey(d.Lookup("_id"))] = len(live)
			live = append(live, d)
		}
	}
	c.docs = live
}

// snapshot returns the live documents; documents are immutable, so the
// slice may be read without the server lock.
func (c *collection) snapshot() []bson.Raw {
	out := make([]bson.Raw, 0, c.count)
	for _, d := range c.docs {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

// catalog is a member's data: namespaces to collections.
type catalog map[string]*collection

func (cat catalog) coll(ns string, create bool) *collection {
	c := cat[ns]
	if c == nil && create {
		c = newCollection()
		cat[ns] = c
	}
	return c
}

// databases lists database names with at least one collection.
func (cat catalog) databases() []string {
	var dbs []string
	for ns := range cat {
		db, _, _ := strings.Cut(ns, ".")
		if !slices.Contains(dbs, db) {
			dbs = append(dbs, db)
		}
	}
	slices.Sort(dbs)
	return dbs
}

// collections lists the collection names of db.
func (cat catalog) collections(db string) []string {
	var out []string
	for ns := range cat {
		if d, c, _ := strings.Cut(ns, "."); d == db {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
