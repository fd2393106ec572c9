// Package queryshape is the contract between a client that drives the
// model and the simulator that runs it: the shape of a storm query in
// modelled units, and the key of the aggregate comment that carries it.
// It is a leaf (standard library only) so that the workload's wire
// driver can send a shape without compiling in the simulator, and the
// simulator can read one without importing the experiment.
package queryshape

import (
	"errors"
	"fmt"
)

// HintKey names the field of an aggregate's comment that says which
// modelled query the pipeline stands for (a Shape: stage, scanDocs,
// docBytes, holdBytes, loadBytes, outputBytes, batchDocs). A client that
// drives the model, such as qmlsab's storm, sends it so that a query on
// small real data runs as the query it describes; mongod ignores a
// comment.
const HintKey = "qmlsabModelShape"

// Shape describes a storm query in modelled units: what the server would
// do for it, independent of how little real data stands for it.
type Shape struct {
	Stage    string `bson:"stage"`    // "$setWindowFields", "$sort" or "$group"
	ScanDocs int64  `bson:"scanDocs"` // documents scanned into the blocking stage
	DocBytes int64  `bson:"docBytes"` // bytes one document occupies in the stage buffer
	// HoldBytes is what an idle cursor keeps between getMores (the merge
	// buffers of a spilled sort, or the in-memory result when nothing
	// spilled); LoadBytes is what each getMore loads to produce its batch
	// (a $setWindowFields partition).
	HoldBytes int64 `bson:"holdBytes"`
	LoadBytes int64 `bson:"loadBytes"`
	// OutputBytes is what the cursor returns in total; getMores return it
	// in batches of BatchDocs documents.
	OutputBytes int64 `bson:"outputBytes"`
	BatchDocs   int64 `bson:"batchDocs"`
}

// defaultBatchBytes is a batch's size when the shape gives no batch
// (mongod's 16 MiB reply limit).
const defaultBatchBytes = 16 << 20

// BatchBytes is what one getMore returns.
func (q Shape) BatchBytes() int64 {
	if b := q.BatchDocs * max(q.DocBytes, 1); b > 0 {
		return b
	}
	return defaultBatchBytes
}

// GetMores is how many getMores drain the query's cursor.
func (q Shape) GetMores() int {
	if q.OutputBytes <= 0 {
		return 0
	}
	return int((q.OutputBytes + q.BatchBytes() - 1) / q.BatchBytes())
}

// Check reports a shape the model cannot run.
func (q Shape) Check() error {
	switch {
	case q.Stage != "$setWindowFields" && q.Stage != "$sort" && q.Stage != "$group":
		return fmt.Errorf("stage %q: want $setWindowFields, $sort or $group", q.Stage)
	case q.ScanDocs < 0 || q.DocBytes < 0 || q.HoldBytes < 0 || q.LoadBytes < 0 || q.OutputBytes < 0 || q.BatchDocs < 0:
		return errors.New("sizes must not be negative")
	}
	return nil
}
