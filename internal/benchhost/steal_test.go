package benchhost

import "testing"

func TestParseCPULineCountsStealAgainstTheFirstEightFields(t *testing.T) {
	s := parseCPULine("cpu  100 5 50 800 10 1 4 30 70 0")
	if !s.ok || s.stolen != 30 || s.total != 1000 {
		t.Fatalf("got %+v, want steal 30 of 1000 (guest time is inside user)", s)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if parseCPULine(bad).ok {
			t.Errorf("%q read as counters", bad)
		}
	}
}

func TestPercentIsAbsentWithoutAReading(t *testing.T) {
	if _, ok := (Steal{}).Percent(); ok {
		t.Fatal("a failed first reading gave a steal share")
	}
}
