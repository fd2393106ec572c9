package benchhost

import (
	"syscall"
	"time"
)

// ProcessCPU is this process's user + system CPU so far: a running total
// that never decreases, so a window's cost is one reading after it minus
// one before.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
