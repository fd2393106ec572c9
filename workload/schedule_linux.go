package workload

import (
	"syscall"
	"time"
)

// fineWait is how much of a wait for a slot fineSleep takes: more than a
// Go timer's lateness (about 1 ms here), so the timer never overshoots
// the slot.
const fineWait = 2 * time.Millisecond

// fineSleep sleeps d with the kernel's nanosleep, about 0.1 ms late where
// a Go timer is about 1 ms late: the runtime's timers wake through the
// network poller, whose wait is in whole milliseconds. A signal cutting
// it short resumes the rest.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rest syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rest); err != syscall.EINTR {
			return
		}
		ts = rest
	}
}
