//go:build linux

package runner

// Exit codes shared by withlock and cron-gate. They follow coreutils
// timeout(1) and sysexits.h so that a wrapper's own outcome never collides
// with the shell's 126, 127 and 128+N, and the command's own code passes
// through unchanged.
const (
	// ExitSkip is the default code for "did not run, try again later"
	// (EX_TEMPFAIL). Both binaries let the operator choose another.
	ExitSkip = 75
	// ExitTimeout means the command ran past its deadline and was stopped.
	ExitTimeout = 124
	// ExitFailure is the wrapper's own failure: bad usage, unusable config,
	// unusable lock dir. The command did not run.
	ExitFailure = 125
	// ExitCannotRun means the command was found but could not be executed.
	ExitCannotRun = 126
	// ExitNotFound means the command was not found.
	ExitNotFound = 127
	// ExitSignalBase plus N is the code for a command killed by signal N.
	ExitSignalBase = 128
	// ExitLost means the locks were lost while the command ran (an etcd
	// lease that could not be renewed): the wrapper stopped the command,
	// because another host may hold its locks now. 70 is sysexits'
	// EX_SOFTWARE, free in the table above: the run cannot be trusted and
	// should be retried.
	ExitLost = 70
)
