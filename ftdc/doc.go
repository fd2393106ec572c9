// Package ftdc reads and writes MongoDB's full-time diagnostic data capture
// (FTDC) format, the diagnostic.data directory in which every mongod keeps
// about one sample a second of serverStatus, replSetGetStatus, systemMetrics
// and the like. qmlsab uses it to read what a real mongod recorded during a
// trial, to have mongosim record the same way, and to dump either as JSON
// lines or CSV.
//
// # The format
//
// A file is a plain sequence of BSON documents, each {_id: Date, type: int,
// ...}:
//
//   - type 0, metadata: `doc` holds one-off facts about the process
//     (buildInfo, hostInfo, getCmdLineOpts). mongod writes one at the start
//     of every file.
//   - type 1, metric chunk: `data` is a binary payload holding a run of
//     samples (below); _id is the time of the chunk's first sample.
//   - type 2, periodic metadata: `doc` is either a whole document of
//     slowly changing settings (`index` 0) or, with `index` n > 0, only the
//     second-level fields that changed since the previous one, plus the
//     start/end dates.
//
// A chunk payload is a 4-byte little-endian length followed by a zlib
// stream that inflates to that many bytes. Inflated, it is: the
// first sample in full as a BSON document (the reference); the number of
// metrics as a little-endian uint32; the number of further samples (deltas)
// as a little-endian uint32; then the deltas metric by metric: every delta
// of the first metric, then every delta of the second, and so on. Each
// delta is the metric's value minus its value in the sample before, taken
// as an unsigned 64-bit number (wrapping), written as an unsigned LEB128
// varint. Zeros are run-length coded: a 0 is followed by a varint counting
// how many more zeros follow it. A run is not broken at the end of a metric
// — it goes on into the next one — and one that runs past the last sample
// is cut there.
//
// The metrics are found by walking the reference document in order,
// descending into sub-documents and arrays (whose element keys are their
// indexes) to at most ten levels: a double (truncated toward zero, NaN as
// 0, clamped to the int64 range), int32, int64, decimal128 (rounded to the
// nearest integer, ties to even, clamped), bool (0 or 1) or Date
// (milliseconds) each give one metric, a Timestamp gives two (seconds,
// then increment); strings, ObjectIds, binary, null and other types give
// none. A chunk whose metric count differs from its reference document's is
// corrupt. A metric's path is its dotted key path, e.g.
// serverStatus.mem.resident; a Timestamp's two metrics are path.t and
// path.i. A sample's time is its top-level `start` Date.
//
// A chunk ends after a fixed number of samples (300 in mongod, the
// reference and 299 deltas) or earlier when a sample's shape differs from
// the reference's — a metric-bearing field added, removed, renamed or of
// another type, where all numeric types count as one — and that sample
// starts the next chunk.
//
// mongod names its files metrics.<UTC time>-<5-digit counter>, appending
// finished chunks to the newest and starting a new file past 10 MB
// (diagnosticDataCollectionFileSizeMB) while deleting the oldest beyond a
// directory cap (diagnosticDataCollectionDirectorySizeMB). The chunk being
// built is rewritten every ten samples into metrics.interim, through a
// temporary file renamed over it, and is taken into the next archive file
// when the process restarts.
//
// # Reading
//
// Reader (NewReader for a stream, Open for files and directories) returns
// one document at a time; Document.Chunk decodes a chunk into columns of
// int64, and Chunk.Samples iterates its samples. ReadAll, Dump and
// ListPaths are built on it. Errors are *Error values carrying the file
// name and the byte offset of the offending document; a document cut short
// by the end of its file (a torn last write) wraps ErrTruncated and comes
// only after everything before it, so callers can keep the partial data.
//
// # Bounds
//
// Memory is bounded by one chunk, never by the file. Before allocating,
// the decoder checks every declared size against fixed bounds and rejects
// larger ones with ErrTooLarge: a BSON document at most MaxDocumentSize
// (20 MiB; its buffer starts at 64 KiB and doubles only as bytes arrive), a chunk's inflated
// size at most MaxChunkUncompressed (16 MiB, and no more than deflate's
// 1032:1 ratio allows), at most MaxMetrics (131,072) metrics and MaxDeltas
// (1,048,576) deltas per chunk, metrics × samples at most MaxChunkValues
// (8,388,608 values, 64 MiB of int64), metric path bytes at most
// MaxPathBytes (16 MiB) and nesting at most MaxDepth (10). The Writer
// closes a chunk early rather than exceed them, so whatever it writes reads
// back.
//
// # Writing
//
// Writer writes samples into a directory as mongod does: chunks, interim
// file, metadata first in every file, rotation by size and a directory cap.
// EncodeChunk and the *Document builders expose the pieces.
package ftdc
