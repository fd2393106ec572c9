package workload

import (
	"encoding/json"

	"github.com/qmlsab/qmlsab/store"
)

// A spec's JSON is how a run's manifest records its resolved workload:
// the JSON tags' snake_case keys, with every duration as seconds through
// store.Seconds (the run folder's one conversion). The methods below only
// swap the time.Duration fields for store.Seconds; the keys are the tags.

// MarshalJSON writes the phases as seconds.
func (p Phases) MarshalJSON() ([]byte, error) {
	return json.Marshal(phasesJSON{store.Seconds(p.Warmup), store.Seconds(p.Storm), store.Seconds(p.Recovery)})
}

// UnmarshalJSON reads phases in seconds.
func (p *Phases) UnmarshalJSON(b []byte) error {
	var w phasesJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = Phases{Warmup: w.Warmup.Duration(), Storm: w.Storm.Duration(), Recovery: w.Recovery.Duration()}
	return nil
}

type phasesJSON struct {
	Warmup   store.Seconds `json:"warmup_s"`
	Storm    store.Seconds `json:"storm_s"`
	Recovery store.Seconds `json:"recovery_s"`
}

// MarshalJSON writes the storm's settings, its durations as seconds.
func (w SpillToDisk) MarshalJSON() ([]byte, error) {
	type plain SpillToDisk
	return json.Marshal(struct {
		plain
		CanarySLO              store.Seconds `json:"canary_slo_s"`
		ServerSelectionTimeout store.Seconds `json:"server_selection_timeout_s"`
		Timeout                store.Seconds `json:"timeout_s"`
	}{plain(w), store.Seconds(w.CanarySLO), store.Seconds(w.ServerSelectionTimeout), store.Seconds(w.Timeout)})
}

// UnmarshalJSON reads the storm's settings, durations in seconds. The
// client's pool settings came after the first manifests: a workload
// written without them reads with the driver's defaults (and no timeout,
// which is what a missing timeout_s reads as).
func (w *SpillToDisk) UnmarshalJSON(b []byte) error {
	type plain SpillToDisk
	var v struct {
		plain
		CanarySLO              store.Seconds `json:"canary_slo_s"`
		ServerSelectionTimeout store.Seconds `json:"server_selection_timeout_s"`
		Timeout                store.Seconds `json:"timeout_s"`
		MaxPoolSize            *int          `json:"max_pool_size"`
		MaxConnecting          *int          `json:"max_connecting"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = SpillToDisk(v.plain)
	w.CanarySLO, w.ServerSelectionTimeout, w.Timeout = v.CanarySLO.Duration(), v.ServerSelectionTimeout.Duration(), v.Timeout.Duration()
	w.MaxPoolSize, w.MaxConnecting = DefaultMaxPoolSize, DefaultMaxConnecting
	if v.MaxPoolSize != nil {
		w.MaxPoolSize = *v.MaxPoolSize
	}
	if v.MaxConnecting != nil {
		w.MaxConnecting = *v.MaxConnecting
	}
	return nil
}
