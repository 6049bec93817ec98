//go:build linux

package main

import (
	"errors"
	"os"

	"github.com/crongate/crongate/internal/sibling"
	"github.com/crongate/crongate/runner"
	"github.com/crongate/crongate/tui"
)

// EtcdBinary is the etcd backend's binary. withlock never links the etcd
// client (about 7 ms and 15 MB per call): a line that asks for the etcd
// backend is handed over to this binary, by exec, so that the PID, the
// process group and the signals a supervisor sends stay those of the
// process it started.
const EtcdBinary = "withlock-etcd"

// dispatch runs the backend the command line chooses: for etcd it execs
// withlock-etcd and returns only on failure (done, with the exit code); for
// the local backend it returns done == false and withlock goes on. An
// unknown $WITHLOCK_BACKEND is refused here (an unknown --backend is
// refused by the parser).
func dispatch(args []string, sigs chan os.Signal) (code int, done bool) {
	v, fromEnv := backend(args)
	switch {
	case v == "etcd":
		if code, stop := runner.HandOff(sigs); stop {
			return code, true
		}
		return execEtcd(args), true
	case fromEnv && v != "" && v != "local":
		out := &tui.Printer{Prog: "withlock"}
		out.Errorf("WITHLOCK_BACKEND=%q: use local or etcd", v)
		return runner.ExitFailure, true
	}
	return 0, false
}

// backend returns the backend args (withlock's flags, before the first
// "--") or $WITHLOCK_BACKEND choose. As in kong, the last --backend wins; a
// flag wins over the environment. A value of "--" is not taken (it ends the
// flags), so the command's own arguments are never read.
func backend(args []string) (v string, fromEnv bool) {
	set := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "--backend":
			if i+1 < len(args) && args[i+1] != "--" {
				v, set = args[i+1], true
				i++
			}
		case len(a) > len("--backend=") && a[:len("--backend=")] == "--backend=":
			v, set = a[len("--backend="):], true
		}
	}
	if !set {
		return os.Getenv("WITHLOCK_BACKEND"), true
	}
	return v, false
}

// wantsEtcd reports whether args or the environment choose etcd.
func wantsEtcd(args []string) bool {
	v, _ := backend(args)
	return v == "etcd"
}

// execEtcd replaces withlock with withlock-etcd (next to this executable,
// else on PATH), with the same arguments. It returns only on failure.
func execEtcd(args []string) int {
	out := &tui.Printer{Prog: "withlock"}
	err := sibling.Exec(EtcdBinary, EtcdBinary, args)
	if errors.Is(err, sibling.ErrNotFound) {
		out.Errorf("--backend etcd needs %s, which is not installed next to withlock or on PATH", EtcdBinary)
		out.Hintf("install it: CGO_ENABLED=0 go install ./cmd/withlock-etcd")
		return runner.ExitFailure
	}
	out.Errorf("%v", err)
	return runner.ExitFailure
}
