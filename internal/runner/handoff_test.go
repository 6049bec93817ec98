package runner

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// A signal caught before a hand-off to another binary is not dropped by
// the exec: HandOff returns it (128+N) and the caller exits instead.
// (Disarmed first: an armed guard would end this test process. The armed
// guard is tested in a child process, guard_test.go.)
func TestHandOffReturnsCaughtSignal(t *testing.T) {
	c := Notify()
	if code, stop := HandOff(c); stop || code != 0 {
		t.Fatalf("nothing caught: HandOff = %d, %v", code, stop)
	}
	c = Notify()
	Disarm()
	defer func() { Notify(); Disarm() }() // keep catching, for the tests after this one
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(c) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if code, stop := HandOff(c); !stop || code != 128+int(syscall.SIGHUP) {
		t.Fatalf("HandOff after SIGHUP = %d, %v; want %d, true", code, stop, 128+int(syscall.SIGHUP))
	}
}
