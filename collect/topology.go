package collect

import (
	"sync"
	"time"

	"github.com/qmlsab/qmlsab/metric"
	"go.mongodb.org/mongo-driver/v2/event"
)

// PrimaryWatcher records the primary changes a driver's topology
// monitoring sees: the other witness of a failover beside the samples'
// hello (it sees a change the moment the driver does, not at the next
// 1 Hz sample).
type PrimaryWatcher struct {
	mu      sync.Mutex
	current string
	seen    bool
	changes []metric.Change
}

// Monitor is the driver hook (options.Client().SetServerMonitor).
func (w *PrimaryWatcher) Monitor() *event.ServerMonitor {
	return &event.ServerMonitor{TopologyDescriptionChanged: func(e *event.TopologyDescriptionChangedEvent) {
		primary := ""
		for _, s := range e.NewDescription.Servers {
			if s.Kind == "RSPrimary" {
				primary = s.Addr.String()
			}
		}
		if primary == "" {
			return // between primaries: the change is counted when the next one appears
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.seen && primary != w.current {
			w.changes = append(w.changes, metric.Change{At: time.Now(), Member: primary})
		}
		w.current, w.seen = primary, true
	}}
}

// Changes are the primary changes seen so far (the first primary the
// driver discovered is not a change).
func (w *PrimaryWatcher) Changes() []metric.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]metric.Change(nil), w.changes...)
}
