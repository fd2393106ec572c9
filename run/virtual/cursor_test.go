package virtual

import (
	"reflect"
	"testing"

	"github.com/qmlsab/qmlsab/mongosim/model"
)

// TestCursorRestIsTheModelsGetMores checks that the getMores an open
// cursor makes one at a time are the model's list, batch for batch, for
// spilled and in-memory stages, exact and ragged last batches, and an
// unset batch size.
func TestCursorRestIsTheModelsGetMores(t *testing.T) {
	p := model.DefaultParams()
	shapes := []model.QueryShape{
		{Stage: "$setWindowFields", ScanDocs: 80_000, DocBytes: 500, HoldBytes: 8 << 20, LoadBytes: 20 << 20, OutputBytes: 2_000_000, BatchDocs: 4000},
		{Stage: "$sort", ScanDocs: 1000, DocBytes: 500, HoldBytes: 1 << 20, OutputBytes: 25_001, BatchDocs: 1},
		{Stage: "$group", ScanDocs: 10, DocBytes: 7, OutputBytes: 70, BatchDocs: 3},
		{Stage: "$sort", ScanDocs: 100_000, DocBytes: 500, OutputBytes: 40 << 20, BatchDocs: 0},
		{Stage: "$sort", ScanDocs: 100, DocBytes: 0, OutputBytes: 9, BatchDocs: 2},
		{Stage: "$sort", ScanDocs: 100, DocBytes: 500, OutputBytes: 0, BatchDocs: 2},
	}
	for _, q := range shapes {
		want := p.GetMoreWorks(q)
		c := &cursorRest{shape: q, left: q.OutputBytes}
		var got []model.Work
		for w, ok := c.next(p); ok; w, ok = c.next(p) {
			got = append(got, w)
			if len(got) > len(want)+1 {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: %d getMores one at a time, the model lists %d (first differing: got %+v)", q, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(got, want []model.Work) any {
	for i := range got {
		if i >= len(want) || got[i] != want[i] {
			return got[i]
		}
	}
	return nil
}
