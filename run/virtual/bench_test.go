package virtual

import (
	"context"
	"testing"

	"github.com/qmlsab/qmlsab/arms"
)

// BenchmarkTrial runs one default-profile trial of D and one of E at the
// embedded default: the unit of work the joint fit repeats. Profile it
// with -cpuprofile to see where a trial's time goes.
func BenchmarkTrial(b *testing.B) {
	for _, name := range []string{"D", "E"} {
		a, _ := arms.Lookup(name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(context.Background(), DefaultConfig(1), a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
