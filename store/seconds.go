package store

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Seconds is a duration as every run-folder file holds it since the v2
// format: a JSON number of seconds (30, 0.015321745), its key suffixed
// "_s". This type is the one place that converts; the record types and
// the workload spec marshal their time.Duration fields through it.
type Seconds time.Duration

// MarshalJSON writes the duration as seconds, formatted as encoding/json
// formats any float64 (so a re-encoded document compares equal).
func (s Seconds) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(s).Seconds())
}

// UnmarshalJSON reads seconds back to the nanosecond, refusing what no
// duration can be (NaN cannot occur in JSON; out of range can).
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("a duration in seconds: %w", err)
	}
	ns := math.Round(f * 1e9)
	if ns > math.MaxInt64 || ns < math.MinInt64 {
		return fmt.Errorf("%v seconds is out of a duration's range", f)
	}
	*s = Seconds(ns)
	return nil
}

// String is the duration as time.Duration prints it ("1m30s").
func (s Seconds) String() string { return time.Duration(s).String() }

// Duration is s as a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(s) }
