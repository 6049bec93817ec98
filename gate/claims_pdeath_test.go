//go:build linux

package gate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/internal/safetext"
)

// TestClaimDiesWithCronGateHelper is the cron-gate of
// TestClaimDiesWithCronGate, run in a process of its own. Run alone, it
// does nothing.
func TestClaimDiesWithCronGateHelper(t *testing.T) {
	dir := os.Getenv("GATE_CLAIM_HELPER")
	if dir == "" {
		return
	}
	cfg := DefaultConfig()
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Gates["g"] = &GateConfig{Name: "g", OncePer: OnceDay}
	cfg.Etcd.Endpoints = []string{"http://127.0.0.1:9"}
	var errb bytes.Buffer
	Run(Invocation{Gate: "g", Config: cfg, Pauses: Pauses{Claims: &fakeClaims{keys: map[string]string{}}},
		Argv: []string{"sh", "-c", `echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 300`, "sh", filepath.Join(dir, "pid")},
		Out:  &safetext.Printer{Prog: "cron-gate", W: &errb}, Sigs: make(chan os.Signal)})
}

// TestClaimDiesWithCronGate: a command run under a period's claim across
// hosts does not outlive its cron-gate (SIGKILLed): the claim's lease dies
// with cron-gate, and another host may then run the period.
func TestClaimDiesWithCronGate(t *testing.T) {
	if os.Getenv("GATE_CLAIM_HELPER") != "" {
		return // in the helper
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestClaimDiesWithCronGateHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GATE_CLAIM_HELPER="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pidFile := filepath.Join(dir, "pid")
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command under the claim never started")
		}
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return // gone (or a zombie waiting for its new parent)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs 30 s after its cron-gate was killed", pid)
		}
	}
}
