package workload

// MergePartialWrite is the partial-write investigation's experiment: $merge pipelines, each
// writing documents tagged with its own op number, run on the primary and
// with read preference secondary (where mongod forwards the writes to the
// primary and the aggregating op never takes the write-intent latch).
// Where the target supports it, queryMemoryLoadSheddingAlwaysShed is armed
// to shed after the first write batch; after each op the driver counts
// the documents it left in the target. An op that failed shed or killed
// with documents written is an unsafe shed.
type MergePartialWrite struct {
	AppName string `yaml:"appName" json:"app_name"`
	// Ops is the number of $merge ops; they alternate primary and
	// secondary read preference.
	Ops        int `yaml:"ops" json:"ops"`
	SourceDocs int `yaml:"sourceDocs" json:"source_docs"`
	// ShedAfter is the write batch from which the failpoint sheds (mongod
	// flushes a $merge's writes in batches; mongosim's are 100 documents,
	// so SourceDocs must exceed one batch for a shed to follow a write).
	ShedAfter int64 `yaml:"shedAfterBatches" json:"shed_after_batches"`
	// PressurePercent is the memory pressure queryMemoryPressureOverride
	// reports, so the shedder is active (mongod sheds only above the low
	// mark).
	PressurePercent float64 `yaml:"pressurePercent" json:"pressure_percent"`
}

// DefaultMergePartialWrite is the partial-write investigation's setting: shed after one batch.
func DefaultMergePartialWrite() MergePartialWrite {
	return MergePartialWrite{AppName: "qmlsab-merge", Ops: 10, SourceDocs: 500, ShedAfter: 1, PressurePercent: 50}
}
