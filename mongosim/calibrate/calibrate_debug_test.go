package calibrate

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qmlsab/qmlsab/arms"
)

func TestDebugOneTrial(t *testing.T) {
	if os.Getenv("CAL_TRACE") != "" {
		Debug = func(s string) { fmt.Println("   ", s) }
		defer func() { Debug = nil }()
	}
	rate, _ := strconv.ParseFloat(os.Getenv("CAL_RATE"), 64)
	names := []string{"A", "D", "E", "F"}
	if a := os.Getenv("CAL_ARMS"); a != "" {
		names = strings.Split(a, ",")
	}
	for _, name := range names {
		arm, _ := arms.Lookup(name)
		start := time.Now()
		cfg := DefaultConfig(1)
		if rate > 0 {
			cfg.Workload.StormRate = rate
		}
		tr, err := Run(cfg, arm)
		if err != nil {
			t.Fatal(err)
		}
		m := tr.Metrics
		fmt.Printf("%s (%v): avail=%.2f fo=%d rst=%d tix=%d/%.0f lowAdm=%.0f/s lowKill=%.0f/s sheds=%.0f/s rssPeak=%.1fG q95=%.0f qmax=%.0f slope=%.1f storm c/s/k/f=%d/%d/%d/%d victim=%dMB %v canary p50=%v p99=%v\n",
			name, time.Since(start).Round(time.Millisecond), m.Availability, m.Failovers, m.Restarts, m.ReadTicketsMin, m.ReadTicketsMedian,
			m.AdmissionsPerSec, m.KillsPerSec, m.ShedsPerSec, float64(m.RSSPeakBytes)/(1<<30), m.LowQueueP95, m.LowQueueMax, m.LowQueueSlope,
			m.StormCompleted, m.StormShed, m.StormKilled, m.StormFailed, m.VictimTrackedP50>>20, m.VictimStages, m.CanaryP50, m.CanaryP99)
	}
}
