package main

import "time"

// Mutant is one deliberate bug and the tests that must catch it.
type Mutant struct {
	Name   string // short, unique; -run selects by it
	Breaks string // the promise the bug breaks, in a line
	Edits  []Edit // applied together
	// The tests that must fail on the mutant: go test -run Run Pkgs, with
	// -tags Tags and Env added to the environment. As narrow as reliably
	// catches it.
	Pkgs    []string
	Run     string
	Tags    string
	Env     []string
	Timeout time.Duration // go test -timeout; default 5m
}

// Edit replaces Old, which must occur exactly once in File (relative to
// the repository root), with New. Exactly once: when the code moves, the
// check fails naming the mutant, instead of testing nothing.
type Edit struct {
	File, Old, New string
}

// Mutants is the curated list: the bugs issue 13 (item 13 of issue 12)
// found the suite could not catch, the important ones it always caught,
// and one per defect fixed in issue 12. Keep each edit small and its
// original text as short as is unique. When a refactor moves the code,
// re-aim the mutant at the code that now keeps the promise; never drop
// one because it no longer applies.
var Mutants = []Mutant{
	// ---- locks: all or nothing, order, skip code ----
	{
		Name:   "path-set-not-released",
		Breaks: "a failed try keeps the paths it took before the busy one (it must hold nothing while it waits)",
		Edits: []Edit{
			{"pathlock/set.go", "			busy := lockfile.Busy(p, s.files[i])\n			s.Release()\n", "			busy := lockfile.Busy(p, s.files[i])\n"},
			{"internal/lockset/local.go", "			c.releaseAll()\n			c.busyPool = -1\n", "			for _, p := range c.pools {\n				p.Release()\n			}\n			c.busyPool = -1\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^(wait|busy)$",
	},
	{
		Name:   "slot-set-not-released",
		Breaks: "a busy pool leaves the slots of the pools before it taken",
		Edits: []Edit{
			{"internal/lockset/local.go", "			c.releaseAll()\n			c.busyPool = i\n", "			c.busyPool = i\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^slots$",
	},
	{
		Name:   "slots-kept-after-busy-path",
		Breaks: "a busy path leaves the slots taken",
		Edits: []Edit{
			{"internal/lockset/local.go", "			c.releaseAll()\n			c.busyPool = -1\n", "			c.paths.Release()\n			c.busyPool = -1\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^slots$",
	},
	// ---- waiting: fair queue, woken by the release itself (issue 17) ----
	{
		Name:   "queue-not-read",
		Breaks: "a newcomer whose set intersects an earlier waiter's does not yield to it",
		Edits: []Edit{
			{"internal/lockset/queue_linux.go", "	if !q.queues() || q.clear {\n", "	if true || !q.queues() || q.clear {\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^fairwait$",
	},
	{
		Name:   "pool-queue-ignored",
		Breaks: "a newcomer takes the slot that an earlier waiter for the full pool reserves",
		Edits: []Edit{
			{"internal/lockset/queue_linux.go", "func (q *queue) poolBusy(ws []waiter) error {\n", "func (q *queue) poolBusy(ws []waiter) error {\n\tif true {\n\t\treturn nil\n\t}\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestPoolWaiter",
	},
	{
		Name:   "pool-reserve-sticks",
		Breaks: "a waiter that now waits for a path keeps reserving a slot, so newcomers on its pool wait for nothing",
		Edits: []Edit{
			{"internal/lockset/queue_linux.go", "		want := busy >= 0 && (keys[i] == keys[busy] || q.reserve[i])\n", "		want := keys[i] == keys[max(busy, 0)] || q.reserve[i]\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestPoolWaiterReservesOnlyWhatItWaitsFor",
	},
	{
		Name:   "pool-reserve-last-only",
		Breaks: "a waiter for two pools reserves only the one its last attempt found full, and is starved when they come free in turn",
		Edits: []Edit{
			{"internal/lockset/queue_linux.go", "		want := busy >= 0 && (keys[i] == keys[busy] || q.reserve[i])\n", "		want := busy >= 0 && keys[i] == keys[busy]\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestPoolWaiterReservesEveryFullPool",
	},
	{
		Name:   "etcd-abort-no-revoke",
		Breaks: "on etcd a waiter ended by a signal leaves its queue key until its lease expires: later jobs yield to it for a TTL",
		Edits: []Edit{
			{"internal/etcdlock/etcdlock.go", "	b.liveMu.Lock()\n\tids := make(", "	return\n\tb.liveMu.Lock()\n\tids := make("},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestSignalRevokesQueueKey", Tags: "etcd",
	},
	{
		Name:   "etcd-dequeue-in-txn",
		Breaks: "on etcd the lock transaction deletes a pool waiter's queue key even when a pool in it is full: it loses its place",
		Edits: []Edit{
			{"internal/etcdlock/txn.go", "		t.Then(c.chain(&pools[i], cands[i], 0))\n\t}\n", "		t.Then(c.chain(&pools[i], cands[i], 0))\n\t}\n\tif c.queued() {\n\t\tt.Then(etcdclient.Delete(c.qkey))\n\t}\n"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestPoolQueueReservesEveryFullPool", Tags: "etcd",
	},
	{
		Name:   "etcd-pool-waiter-writes-per-poll",
		Breaks: "on etcd a waiter for a full pool sends its lock transaction at every poll (a write; two with paths) instead of reading the pool",
		Edits: []Edit{
			{"internal/etcdlock/wait.go", "	if c.busyPrefix {\n\t\treturn c.stillFull()\n\t}", "	if c.busyPrefix {\n\t\treturn false\n\t}"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestPoolWaiterIdleWritesNothing", Tags: "etcd",
	},
	{
		Name:   "etcd-ledger-skips-waiters",
		Breaks: "on etcd a queued waiter's ledger leaves out the earlier waiters on its paths: it takes a free path ahead of them",
		Edits: []Edit{
			{"internal/etcdlock/ledger.go", "		if kv.v.intersects(ids) {\n\t\t\tl.wait[kv.key] = kv.rev", "		if false && kv.v.intersects(ids) {\n\t\t\tl.wait[kv.key] = kv.rev"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestFairWait", Tags: "etcd",
	},
	{
		Name:   "etcd-ledger-stale-delete",
		Breaks: "on etcd a delete older than the key a waiter read empties its ledger: it writes a lock transaction bound to fail",
		Edits: []Edit{
			{"internal/etcdlock/ledger.go", "ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > created", "ev.Type == mvccpb.DELETE && created >= 0"},
		},
		Pkgs: []string{"./internal/etcdlock"}, Run: "TestLedger",
	},
	{
		Name:   "etcd-holder-as-waiter",
		Breaks: "on etcd a newcomer is told a holder (which keeps its queue key) is an earlier waiter, and watches its queue key, not the path",
		Edits: []Edit{
			{"internal/etcdlock/queue.go", "if !ok || v.Keeps && holding[kv.Lease] {", "if !ok {"},
		},
		Pkgs: []string{"./internal/etcdlock", "./tests/etcd"}, Run: "TestJudgeHolderQueueKey|TestHolderKeepsQueueKey", Tags: "etcd",
	},
	{
		Name:   "etcd-pool-waiter-as-holder",
		Breaks: "on etcd a waiter with pools whose transaction put its paths for a moment is taken for a holder: a later waiter takes the set ahead of it",
		Edits: []Edit{
			{"internal/etcdlock/queue.go", "if !ok || v.Keeps && holding[kv.Lease] {", "if !ok || holding[kv.Lease] {"},
		},
		Pkgs: []string{"./internal/etcdlock"}, Run: "TestJudgeHolderQueueKey",
	},
	{
		Name:   "etcd-pool-queue-all",
		Breaks: "on etcd a waiter stuck on a path reserves a slot of every pool it takes",
		Edits: []Edit{
			{"internal/etcdlock/queue.go", "	v.Pools = c.reserve\n", "	for _, p := range c.pools {\n\t\tv.Pools = append(v.Pools, p.prefix)\n\t}\n"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestPoolQueueReservesOnlyWhatItWaitsFor", Tags: "etcd",
	},
	{
		Name:   "wait-not-in-flock",
		Breaks: "a waiter for a busy path is woken by inotify and the poll, not by the release (a LOCK_UN reaches it 250 ms late)",
		Edits: []Edit{
			{"internal/lockset/watch_linux.go", "	if c.paths == nil || c.noBlock {\n", "	if true || c.paths == nil || c.noBlock {\n"},
		},
		Pkgs: []string{"./internal/lockset"}, Run: "TestWaiterBlocksInFlock", Timeout: 3 * time.Minute,
	},
	{
		Name:   "sort-order-reversed",
		Breaks: "the set is locked in another order than Python's sorted(key=str)",
		Edits: []Edit{
			{"pathlock/canon.go", "	slices.Sort(out)\n	return slices.Compact(out), nil", "	slices.Sort(out)\n	slices.Reverse(out)\n	return slices.Compact(out), nil"},
		},
		Pkgs: []string{"./pathlock"}, Run: "TestCanonicalSet",
	},
	{
		Name:   "skip-code-0",
		Breaks: "withlock exits 0 instead of the skip code when busy",
		Edits: []Edit{
			{"internal/withlock/run.go", "		r.out.Skipf(\"skipped %s: %v\", QuoteArgs(r.o.Command), be)\n	}\n	return r.o.SkipCode\n", "		r.out.Skipf(\"skipped %s: %v\", QuoteArgs(r.o.Command), be)\n	}\n	return 0\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^busy$",
	},
	{
		Name:   "skip-code-1",
		Breaks: "withlock exits 1 instead of the skip code when busy",
		Edits: []Edit{
			{"internal/withlock/run.go", "		r.out.Skipf(\"skipped %s: %v\", QuoteArgs(r.o.Command), be)\n	}\n	return r.o.SkipCode\n", "		r.out.Skipf(\"skipped %s: %v\", QuoteArgs(r.o.Command), be)\n	}\n	return 1\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^busy$",
	},

	// ---- canonical paths: Python's rule ----
	{
		Name:   "symlinks-not-resolved-stress",
		Breaks: "withlock does not resolve symlinks: an alias and its target are two locks (the stress checker must see the overlap)",
		Edits: []Edit{
			{"pathlock/canon.go", "	case st.Mode&unix.S_IFMT == unix.S_IFLNK:\n		kind = canonKindLink\n", "	case st.Mode&unix.S_IFMT == unix.S_IFLNK:\n		kind = canonKindDir\n"},
		},
		Pkgs: []string{"./tests/stress"}, Run: "TestStressExclusion", Env: []string{"STRESS_SECONDS=5"},
	},
	{
		Name:   "symlinks-not-resolved-fault",
		Breaks: "the same bug, which the fault checker must see too",
		Edits: []Edit{
			{"pathlock/canon.go", "	case st.Mode&unix.S_IFMT == unix.S_IFLNK:\n		kind = canonKindLink\n", "	case st.Mode&unix.S_IFMT == unix.S_IFLNK:\n		kind = canonKindDir\n"},
		},
		Pkgs: []string{"./tests/fault"}, Run: "TestKillRandom", Env: []string{"FAULT_ITERATIONS=40"},
	},
	{
		Name:   "dotdot-lexical",
		Breaks: "`..` is applied to the path as written, not after symlinks as Python does",
		Edits: []Edit{
			{"pathlock/canon.go", "	ok, err := r.joinRealpath(r.resume(s))\n", "	ok, err := r.joinRealpath(r.resume(path.Clean(s)))\n"},
			{"pathlock/canon.go", "	\"fmt\"\n", "	\"fmt\"\n	\"path\"\n"},
		},
		Pkgs: []string{"./pathlock"}, Run: "TestCanonical",
	},

	// ---- the journal ----
	{
		Name:   "journal-no-fsync",
		Breaks: "end, skip and error records are not fsynced",
		Edits: []Edit{
			{"gate/journal/journal.go", "		if err := journalSync(f); err != nil {", "		if err := error(nil); err != nil {"},
		},
		Pkgs: []string{"./gate/journal"}, Run: "TestJournalFsync",
	},
	{
		Name:   "journal-no-lock",
		Breaks: "journal appends and summary updates without the gate's lock",
		Edits: []Edit{
			{"gate/journal/journal.go", "		return statefile.Locked(context.Background(), j.dir, gateLockFile, 0, func() error {\n			_, _, err := j.appendLine(line, false)", "		return unlocked(func() error {\n			_, _, err := j.appendLine(line, false)"},
			{"gate/journal/journal.go", "	return statefile.Locked(context.Background(), j.dir, gateLockFile, 0, func() error {\n		s, _ := j.readSummary()", "	return unlocked(func() error {\n		s, _ := j.readSummary()"},
			{"gate/journal/journal.go", "// journalSync is (*os.File).Sync,", "func unlocked(f func() error) error { return f() }\n\n// journalSync is (*os.File).Sync,"},
		},
		Pkgs: []string{"./gate/journal"}, Run: "TestConcurrent(Appends|Rotations)LoseNothing",
	},

	// ---- the watchdog ----
	{
		Name:   "watchdog-one-strike",
		Breaks: "the watchdog alerts on the first bad check, ignoring alert_after",
		Edits: []Edit{
			{"internal/watch/machine.go", "if !e.Muted && e.Count >= m.AlertAfter {", "if !e.Muted && e.Count >= 1 {"},
		},
		Pkgs: []string{"./internal/watch"}, Run: "TestAlertAfter|TestBadOnceClearsSilently",
	},
	{
		Name:   "crontab-unreadable-scheduled",
		Breaks: "a crontab that cannot be read counts as scheduling the gate",
		Edits: []Edit{
			{"internal/watch/observe.go", "	if o.cronErr != nil {\n		return Held, \"crontab unknown: \"", "	if o.cronErr != nil {\n		return OK, \"crontab unknown: \""},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^check$",
	},

	// ---- the dashboard ----
	{
		Name:   "csrf-no-same-origin",
		Breaks: "a POST from another site is accepted (no same-origin check)",
		Edits: []Edit{
			{"internal/dashboard/http.go", "		if err := sameOrigin(r, !a.bearer); err != nil {", "		if err := error(nil); err != nil {"},
		},
		Pkgs: []string{"./internal/dashboard"}, Run: "TestCSRF",
	},
	{
		Name:   "csrf-cookie-without-proof",
		Breaks: "a POST authenticated by the cookie needs no Origin, Referer or Sec-Fetch-Site",
		Edits: []Edit{
			{"internal/dashboard/http.go", "	if proof {\n", "	if false && proof {\n"},
		},
		Pkgs: []string{"./internal/dashboard"}, Run: "TestCSRF|TestSessionLeak",
	},
	{
		Name:   "session-as-bearer",
		Breaks: "the session cookie's value is accepted as a bearer token",
		Edits: []Edit{
			{"internal/dashboard/http.go", "bearer: strings.EqualFold(scheme, \"Bearer\") && equal(strings.TrimSpace(tok), h.token)}", "bearer: strings.EqualFold(scheme, \"Bearer\") && (equal(strings.TrimSpace(tok), h.token) || h.sessions.get(strings.TrimSpace(tok), h.now()) != nil)}"},
		},
		Pkgs: []string{"./internal/dashboard"}, Run: "TestSessionLeak",
	},

	// ---- etcd ----
	{
		Name:   "etcd-path-compare",
		Breaks: "a path key is put whether or not someone holds it (CreateRevision == 0 compare gone)",
		Edits: []Edit{
			{"internal/etcdlock/txn.go", `t.If(etcdclient.CreateIs(k.key, 0)).Then(`, `t.Then(`},
		},
		// The read before the transaction (precheck) finds a held key
		// first in small sets: only a key beyond it meets the compare.
		Pkgs: []string{"./tests/etcd"}, Run: "TestLargeSet", Tags: "etcd",
	},
	{
		Name:   "etcd-slot-compare",
		Breaks: "a slot key is put whether or not someone holds it",
		Edits: []Edit{
			{"internal/etcdlock/txn.go", `new(etcdclient.Txn).If(etcdclient.CreateIs(k, 0)).Then(`, `new(etcdclient.Txn).Then(`},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestSlotTemplateTwice$", Tags: "etcd",
	},
	{
		Name:   "etcd-lease-loss-late",
		Breaks: "a renewal is retried until 2 TTLs after the last one: the lease is declared lost, and the command stopped, only after etcd has expired it and others may hold its paths",
		Edits: []Edit{
			// The renewal deadline is the guard: past it the lease is
			// lost and the command stopped (KillBy only bounds the TERM
			// to KILL grace once it is).
			{"internal/etcdlock/lease.go", "last.Add(l.ttl*3/4))", "last.Add(l.ttl*2))"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestLeaseLossStopsCommand", Tags: "etcd",
	},

	// ---- issue 12's fixes, one mutant each ----
	{
		Name:   "drain-forever",
		Breaks: "log_output waits for every holder of the pipe (item 1)",
		Edits: []Edit{
			{"internal/runner/runner.go", "	t := time.NewTimer(time.Until(c.end.Add(d)))\n", "	t := time.NewTimer(time.Until(c.end.Add(d)) + time.Hour)\n"},
		},
		Pkgs: []string{"./internal/runner"}, Run: "TestDrain",
	},
	{
		Name:   "timeout-leader-only",
		Breaks: "after a timeout the run ends when the leader exits, and the group is never KILLed (item 2)",
		Edits: []Edit{
			{"internal/runner/runner.go", "			if !res.TimedOut || c.tty || !c.groupAlive() {", "			if true {"},
		},
		Pkgs: []string{"./internal/runner"}, Run: "TestTimeoutKillsGroupAfterLeaderExits",
	},
	{
		Name:   "prestart-guard-off",
		Breaks: "a signal before the command starts is queued instead of ending the wrapper (item 5)",
		Edits: []Edit{
			{"internal/runner/guard.go", "		armed: true,\n", "		armed: false,\n"},
		},
		Pkgs: []string{"./internal/runner"}, Run: "TestGuard",
	},
	{
		Name:   "safeopen-file-follows",
		Breaks: "files in lock and state dirs are opened through a symlink (item 4)",
		Edits: []Edit{
			{"internal/safeopen/file.go", "const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK", "const openFlags = unix.O_NONBLOCK"},
		},
		Pkgs: []string{"./internal/safeopen"}, Run: ".",
	},
	{
		Name:   "safeopen-trust-anyone",
		Breaks: "a directory or symlink of another user is trusted on the walk (item 4)",
		Edits: []Edit{
			{"internal/safeopen/safeopen.go", "func (w *walker) trusted(uid uint32) bool { return uid == 0 || uid == w.uid }", "func (w *walker) trusted(uid uint32) bool { return true }"},
		},
		Pkgs: []string{"./internal/safeopen"}, Run: ".",
	},
	{
		Name:   "safeopen-walk-follows",
		Breaks: "the walk opens each component by name, following a symlink flipped in after the check (item 4)",
		Edits: []Edit{
			{"internal/safeopen/safeopen.go", "return unix.Openat(cur, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)", "return unix.Openat(cur, name, unix.O_PATH|unix.O_CLOEXEC, 0)"},
		},
		Pkgs: []string{"./internal/safeopen"}, Run: ".",
	},
	{
		Name:   "paths-from-nul-accepted",
		Breaks: "a NUL in a line of --paths-from is not refused (item 6)",
		Edits: []Edit{
			{"internal/withlock/run.go", "		if !null {\n			if i := bytes.IndexByte(data, 0); i >= 0 {", "		if false {\n			if i := bytes.IndexByte(data, 0); i >= 0 {"},
		},
		Pkgs: []string{"./internal/withlock"}, Run: "TestScanPaths",
	},
	{
		Name:   "reason-accepts-bidi",
		Breaks: "a pause reason with a bidirectional control is accepted (item 7)",
		Edits: []Edit{
			{"gate/reason.go", "	if err := safetext.Check(s); err != nil {", "	if err := safetext.Check(s); err != nil && !strings.Contains(err.Error(), \"bidirectional\") {"},
			{"gate/reason.go", "	\"fmt\"\n", "	\"fmt\"\n	\"strings\"\n"},
		},
		Pkgs: []string{"./gate"}, Run: "TestCheckReason",
	},
	{
		Name:   "safetext-esc-raw",
		Breaks: "ESC is printed raw, so stored text can recolour the terminal (item 7)",
		Edits: []Edit{
			{"internal/safetext/safetext.go", "	case r < 0x20 || r >= 0x7f && r < 0xa0:\n		return true", "	case r < 0x20 && r != 0x1b || r >= 0x7f && r < 0xa0:\n		return true"},
		},
		Pkgs: []string{"./internal/safetext"}, Run: "TestLine|TestCheck|TestUnsafeSet",
	},
	{
		Name:   "status-table-raw",
		Breaks: "status prints stored reasons and details raw: an escape sequence recolours the terminal (item 7)",
		Edits: []Edit{
			{"internal/crongate/table.go", "var cell = safetext.Line\n", "var cell = func(s string) string { return s }\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^control_chars$",
	},
	{
		Name:   "config-read-not-stable",
		Breaks: "a config saved in place is read half-written (item 3)",
		Edits: []Edit{
			{"gate/configread.go", "settled = !r.v.recent(now)", "settled = true"},
		},
		Pkgs: []string{"./gate"}, Run: "TestReadConfig",
	},
	{
		Name:   "config-edit-no-recheck",
		Breaks: "an edit renames over a config someone saved in place meanwhile (item 3)",
		Edits: []Edit{
			{"internal/gateconf/edit.go", "	if !gate.ConfigUnchanged(target, orig, v) {", "	if false && !gate.ConfigUnchanged(target, orig, v) {"},
		},
		Pkgs: []string{"./internal/gateconf"}, Run: "TestSetPausedEditRaced",
	},
	{
		Name:   "config-write-fail-silent",
		Breaks: "pause/resume report success when the config cannot be written (item 11, and the [!root] scripts)",
		Edits: []Edit{
			{"internal/gateconf/edit.go", "	tmp, err := os.CreateTemp(dir, \".\"+base+\".cron-gate-*\")\n	if err != nil {\n", "	tmp, err := os.CreateTemp(dir, \".\"+base+\".cron-gate-*\")\n	if err != nil {\n		return nil\n	}\n	if err != nil {\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^pause$",
	},
	{
		Name:   "config-read-blocks",
		Breaks: "the config is opened blocking: a FIFO there hangs every command (item 5)",
		Edits: []Edit{
			{"gate/configread.go", "unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC|flags", "unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|flags"},
		},
		Pkgs: []string{"./gate"}, Run: "TestReadConfigSpecialFiles",
	},
	{
		Name:   "paths-from-unbounded",
		Breaks: "--paths-from reads without a byte limit: an endless input never ends (item 6)",
		Edits: []Edit{
			{"internal/withlock/run.go", "		if total > MaxPathsFromBytes {", "		if false && total > MaxPathsFromBytes {"},
		},
		Pkgs: []string{"./tests"}, Run: "TestPathsFromBounded/^zero-stdin-null$",
	},
	{
		Name:   "temps-named-never-cleaned",
		Breaks: "state files are written through named temps that a SIGKILL leaves for ever (item 8)",
		Edits: []Edit{
			{"internal/statefile/statefile.go", "	RemoveStaleTemps(d, name, o.AnyTarget)\n	err := writeTmpfile(d, name, data, o)\n", "	err := writeNamed(d, name, data, o)\n"},
		},
		Pkgs: []string{"./internal/statefile"}, Run: "TestKilledWritersLeaveNoTemps",
	},
	{
		Name:   "pause-typo-accepted",
		Breaks: "pausing a name nobody knows succeeds silently while the real gate runs on (item 11)",
		Edits: []Edit{
			{"internal/crongate/pause.go", "	if !force {\n", "	if false {\n"},
		},
		Pkgs: []string{"./internal/crongate"}, Run: "TestPauseUnknownGate",
	},
	{
		Name:   "etcd-slot-template-twice",
		Breaks: "a slot template given twice puts one key twice in a transaction: etcd refuses it (item 10)",
		Edits: []Edit{
			{"internal/etcdlock/etcdlock.go", "c.pools[i].shared = seen[c.pools[i].template] > 1", "c.pools[i].shared = false"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestSlotTemplateTwice$", Tags: "etcd",
	},
	{
		Name:   "recycled-pid-no-slack",
		Breaks: "the reused-PID rule has no slack: a pidfile's live writer may be judged recycled (item 12)",
		Edits: []Edit{
			{"gate/legacypidfile.go", "return started.After(written.Add(recycleSlack))", "return started.After(written)"},
		},
		Pkgs: []string{"./gate"}, Run: "TestPidfileAlive",
	},

	// ---- issue 32 item 9: behaviours no test pinned ----
	{
		Name:   "once-claim-released-at-once",
		Breaks: "a once_per period claim is released as soon as it is taken: a second call of the period, made while the first one's command runs, runs too",
		Edits: []Edit{
			{"gate/journal/claim.go", "	return func() { l.Close() }, true, nil\n", "	l.Close()\n\treturn func() {}, true, nil\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^once_overlap$",
	},
	{
		Name:   "trigger-waits-jitter",
		Breaks: "cron-gate trigger (and the dashboard's run now) waits out the gate's jitter before running",
		Edits: []Edit{
			{"gate/jitter.go", "	if d <= 0 || r.inv.ManualBy != \"\" {\n", "	if d <= 0 {\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^trigger_jitter$",
	},
	{
		Name:   "queue-clear-while-busy",
		Breaks: "a queued waiter counts itself first once it has looked with its own ticket, even when an earlier intersecting waiter was there: it passes that waiter at its next wake-up (a hold longer than the 250 ms poll)",
		Edits: []Edit{
			{"internal/lockset/queue_linux.go", "	q.clear = busy == nil && q.ticket != \"\" && len(ws) == 0\n", "	q.clear = q.ticket != \"\" && len(ws) == 0\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestWithlock/^fairwait_hold$",
	},
	{
		Name:   "trigger-no-same-origin",
		Breaks: "the dashboard's run now (POST /api/trigger) takes a cross-site request carrying the session's cookie",
		Edits: []Edit{
			{"internal/dashboard/http.go", "	if r.Method == http.MethodPost {\n", "	if r.Method == http.MethodPost && r.URL.Path != \"/api/trigger\" {\n"},
		},
		Pkgs: []string{"./tests"}, Run: "TestServeTriggerSameOrigin",
	},
	{
		Name:   "etcd-claim-kept-after-failure",
		Breaks: "a failed run leaves its period's claim in etcd: another host skips the period until the claim's lease expires (ClaimTTL)",
		Edits: []Edit{
			{"gate/claims.go", "	if end.Outcome != journal.OutcomeSuccess {\n		r.claim.Release()\n", "	if end.Outcome != journal.OutcomeSuccess {\n"},
		},
		Pkgs: []string{"./tests/etcd"}, Run: "TestOncePerFailureReleasesClaim", Tags: "etcd",
	},
	{
		Name:   "why-prints-raw",
		Breaks: "cron-gate why prints stored text (a pause's reason, a journal's detail) raw: ESC and bidi controls reach the terminal",
		Edits: []Edit{
			{"internal/crongate/why.go", "fmt.Fprintln(w, cell(fmt.Sprintf(format, args...)))", "fmt.Fprintln(w, fmt.Sprintf(format, args...))"},
		},
		Pkgs: []string{"./tests"}, Run: "TestCronGate/^control_chars$",
	},

	// ---- the suite's own assertions ----
	{
		Name:   "json-vacuous-pass",
		Breaks: "the scripts' json command passes when its path selects nothing (issue 12, item 13)",
		Edits: []Edit{
			{"tests/helpers_crongate_test.go", "	case len(vals) == 0 && !count && (re != nil || !neg):", "	case false && len(vals) == 0 && !count && (re != nil || !neg):"},
		},
		Pkgs: []string{"./tests"}, Run: "TestJSONNotVacuous",
	},
}
