//go:build !linux

package workload

import "time"

// fineWait is 0 where no finer sleep than a Go timer is used: the timer
// takes the whole wait.
const fineWait = 0

// fineSleep is never reached with time left where fineWait is 0 but for
// the rounding of a wait already due; time.Sleep covers it.
func fineSleep(d time.Duration) { time.Sleep(d) }
