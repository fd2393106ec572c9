// Package benchhost measures, for a benchmark, what the host did to it:
// how much of the machine's CPU time the hypervisor gave to other tenants
// ("steal") while the benchmark's timed code ran. A figure timed by the
// host's clock (a latency, seconds) from a repetition the host stole from
// says more about the host than about the code, and make bench's verdicts
// set such repetitions aside (scripts/benchverdict says how). And the CPU
// the benchmark's own process used (ProcessCPU), for a benchmark whose
// figure is a cost.
package benchhost

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Unit is the benchmark metric a repetition's steal share is reported as.
const Unit = "steal-%"

// Steal is a reading of the machine's CPU time counters; ok false where
// they cannot be read (no /proc/stat: not Linux).
type Steal struct {
	stolen, total uint64
	ok            bool
}

// ReadSteal reads the counters now.
func ReadSteal() Steal {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return Steal{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return Steal{}
	}
	return parseCPULine(sc.Text())
}

// parseCPULine reads /proc/stat's first line, "cpu  user nice system idle
// iowait irq softirq steal guest guest_nice" in clock ticks summed over
// the CPUs. The total is the first eight: guest time is already counted
// in user and nice.
func parseCPULine(line string) Steal {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return Steal{}
	}
	var s Steal
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return Steal{}
		}
		s.total += n
		if i == 7 {
			s.stolen = n
		}
	}
	s.ok = true
	return s
}

// Percent is the share of the machine's CPU time stolen between s and
// now; ok false where either reading failed or no time passed.
func (s Steal) Percent() (pct float64, ok bool) {
	now := ReadSteal()
	if !s.ok || !now.ok || now.total <= s.total {
		return 0, false
	}
	return 100 * float64(now.stolen-s.stolen) / float64(now.total-s.total), true
}

// Report adds the share stolen since s to b's results as Unit; where it
// cannot be read nothing is reported (absent, not 0).
func (s Steal) Report(b *testing.B) {
	if pct, ok := s.Percent(); ok {
		b.ReportMetric(pct, Unit)
	}
}
