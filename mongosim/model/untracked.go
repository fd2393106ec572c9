package model

// Untracked memory: resident bytes that belong to an operation or a cursor
// but that no memory tracker reports, so the shedder's per-op size (and
// inUseTrackedMemBytes in $currentOp) never includes them, while RSS and
// the OOM killer do. What the model counts, after mongod's source:
//   - every live operation: its thread's touched stack and its
//     OperationContext, CurOp, plan tree and storage cursor
//     (Host.UntrackedPerOpBytes);
//   - every idle cursor: ClientCursor, plan executor and storage session
//     (Host.UntrackedPerCursorBytes);
//   - every spilled run of a query that merges its runs: the sorter's file
//     iterator buffer (Host.SpillRunBufferBytes, 64 KiB blocks). The
//     sorter reserves these inside its own budget, but the stage's tracked
//     bytes in the model stand for the sorted data and the partition only;
//   - a getMore's reply batch, built in a BSON buffer as documents are
//     emitted (Host.ReplyBufferUntracked).
// The $setWindowFields partition (SpillableCache) and the sort buffer are
// tracked, as memory_usage_tracker users report them.

// queryFile is the id of the spill file of op's query: its cursor's id, or
// the op's own (negated) when it has no cursor.
func queryFile(op *Op) int64 {
	if op.CursorID != 0 {
		return op.CursorID
	}
	return -op.ID
}

// opUntracked recomputes a live op's untracked bytes.
func (n *Node) opUntracked(op *Op) {
	h := n.host.h
	b := h.UntrackedPerOpBytes + int64(op.runs)*h.SpillRunBufferBytes
	if h.ReplyBufferUntracked && op.Kind == KindGetMore {
		if r := op.Work.ReadSpillBytes; r > 0 {
			// The reply grows with the share of the batch's reads done.
			b += int64(float64(op.Work.ReplyBytes) * (float64(r) - op.readLeft) / float64(r))
		}
		if op.Work.BufferBytesPerDoc > 0 && op.Work.ReadSpillBytes == 0 {
			b += int64(op.scanned) * op.Work.BufferBytesPerDoc
		}
	}
	n.setUntracked(op, b)
}

func (n *Node) setUntracked(op *Op, b int64) {
	n.host.untracked += b - op.untracked
	op.untracked = b
}

// cursorUntracked adds (sign 1) or removes (sign -1) an idle cursor's
// untracked bytes.
func (n *Node) cursorUntracked(c cursor, sign int64) {
	h := n.host.h
	n.host.untracked += sign * (h.UntrackedPerCursorBytes + int64(c.runs)*h.SpillRunBufferBytes)
}

// dropQueryFile deletes a finished query's spill file.
func (n *Node) dropQueryFile(id int64) {
	n.host.pc.remove(id)
}
