//go:build linux

package withlock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crongate/crongate/internal/runner"
)

// DefaultLockDir is the lock dir of the user's Python workers
// (scripts/lib/blog_file_lock.py), so that both take the same locks.
const DefaultLockDir = "/tmp/blog-file-locks"

// CLI is withlock's command line. The first "--" ends withlock's flags;
// everything after it is the command, untouched.
type CLI struct {
	Paths          []string      `short:"p" sep:"none" placeholder:"PATH,..." help:"Paths to lock (comma-separated, repeatable)."`
	PathsFrom      string        `placeholder:"FILE" help:"Read paths from FILE, one per line ('-' for stdin)."`
	Null           bool          `short:"0" help:"--paths-from and --candidates-from are NUL-separated (for names with newlines)."`
	FirstOf        bool          `help:"Lock the first free of the candidate sets of --candidates-from, in order; skip if none is."`
	CandidatesFrom string        `placeholder:"FILE" help:"With --first-of: read candidate sets from FILE ('-' for stdin), one path per line, sets separated by an empty line (with -0: by an empty entry)."`
	LockDir        string        `env:"WITHLOCK_LOCK_DIR" placeholder:"DIR" default:"${lockdir}" help:"Directory of the per-path lock files (default ${lockdir})."`
	Slots          []int         `sep:"none" placeholder:"N" help:"Take one of N slots of a pool (repeatable: one pool per --slots)."`
	SlotFile       []string      `sep:"none" placeholder:"TEMPLATE" help:"Slot file template with {i}, paired with the --slots of the same position (default LOCKDIR/withlock-slot-{i}.lock)."`
	Wait           time.Duration `placeholder:"DURATION" help:"Retry the whole set until DURATION has passed before skipping."`
	SkipCode       int           `default:"${skipcode}" placeholder:"N" help:"Exit code when something is busy (default ${skipcode}, EX_TEMPFAIL)."`
	runner.TimeoutFlags
	runner.OutputFlags
	// The etcd backend (docs/etcd.md, "Across hosts (etcd)"). withlock itself
	// never sees these with --backend etcd: it hands such a line to
	// withlock-etcd (the registry, backend.go), which parses this same
	// struct and applies the defaults named in the help (its Driver's
	// Configure). They have no kong defaults or env tags, so the fast
	// parser (which declines them) and kong agree.
	Backend           string        `placeholder:"local|etcd" help:"Where the locks live: local flock files (default) or an etcd cluster shared by several hosts (runs withlock-etcd). Also $WITHLOCK_BACKEND."`
	Endpoints         []string      `sep:"," placeholder:"URL,..." help:"etcd: the cluster's endpoints, every member (default $WITHLOCK_ETCD_ENDPOINTS, else http://127.0.0.1:2379)."`
	KeyRoot           string        `placeholder:"DIR" help:"etcd: paths are named relative to DIR, where this host sees the shared tree; a path outside it is refused (default $WITHLOCK_KEY_ROOT, else /)."`
	KeyPrefix         string        `placeholder:"PREFIX" help:"etcd: key prefix (default /withlock)."`
	TTL               time.Duration `name:"ttl" placeholder:"DURATION" help:"etcd: lease TTL in whole seconds (default 10s); if the lease cannot be renewed the command is stopped, exit 70."`
	OnCoordinatorDown string        `placeholder:"fail|skip" help:"etcd: if the cluster cannot be reached, fail (exit 125, default) or skip (the skip code); the command never runs unlocked."`
	LockDelay         string        `placeholder:"DURATION" help:"etcd: a lock whose lease expired (its holder died, froze or was cut off) stays taken this long more; a release is immediate (default 5s; 0s disables)."`
	CAFile            string        `placeholder:"FILE" help:"etcd: CA certificates (PEM) that sign the members' certificates, for https:// endpoints (default $WITHLOCK_ETCD_CA_FILE, else the system's)."`
	CertFile          string        `placeholder:"FILE" help:"etcd: client certificate (PEM), for members that require one (default $WITHLOCK_ETCD_CERT_FILE)."`
	KeyFile           string        `placeholder:"FILE" help:"etcd: the client certificate's key (PEM; mode 0600 or stricter) (default $WITHLOCK_ETCD_KEY_FILE)."`
	ServerName        string        `placeholder:"NAME" help:"etcd: the name the members' certificates carry, when it is not the endpoints' host (default $WITHLOCK_ETCD_SERVER_NAME)."`
	EtcdUser          string        `placeholder:"USER" help:"etcd: user for etcd's own auth (default $WITHLOCK_ETCD_USER); the password comes from --password-file or $WITHLOCK_ETCD_PASSWORD, never from the command line."`
	PasswordFile      string        `placeholder:"FILE" help:"etcd: file holding --etcd-user's password, mode 0600 or stricter (default $WITHLOCK_ETCD_PASSWORD_FILE)."`
	Version           bool          `fast:"-" help:"Print the version and exit."`
}

// Vars are the values CLI's tags name (${lockdir}, ...), for kong and
// the fast parser alike: the defaults are written once, here and in
// runner.
func Vars() map[string]string {
	v := runner.FlagVars(", and what was taken", " (nor, with etcd, that a member is older than the safe version)")
	v["lockdir"] = DefaultLockDir
	v["skipcode"] = strconv.Itoa(runner.ExitSkip)
	return v
}

// Options is the parsed command line plus the command.
type Options struct {
	CLI
	Command []string
	// Question is set by withlock who: the connection only reads, so a
	// backend prepares nothing for taking locks (etcd grants no lease).
	Question bool
}

// Description is the text of withlock --help.
const Description = `Run COMMAND while holding per-path flock locks and concurrency slots, all or
nothing. Lock files are the Python workers' own (sha256 of the resolved path
+ ".lock" in the lock dir), so old and new processes exclude each other.

Exit codes: the command's own; 75 (--skip-code) skipped because busy;
124 timed out; 125 withlock's own failure; 126 not executable; 127 not
found; 128+N the command died of signal N.

withlock who [flags] [PATH...] says who holds the locks a withlock line
would take, and takes nothing (withlock who --help).`

// UsageError marks a problem with the command line (exit 125).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Validate checks what the parser cannot: the command, the value ranges,
// the pairing of pools; it also splits --paths on commas (here, not in
// kong, so that both parsers split alike). The backend and its flags are
// Check's.
func (o *Options) Validate(found bool) error {
	switch {
	case !found:
		return UsageError{"no command: put it after --, as in: withlock --paths a,b -- COMMAND"}
	case len(o.Command) == 0 || o.Command[0] == "":
		return UsageError{"empty command after --"}
	case o.Wait < 0:
		return UsageError{fmt.Sprintf("--wait %v is negative", o.Wait)}
	case o.Timeout < 0:
		return UsageError{fmt.Sprintf("--timeout %v is negative", o.Timeout)}
	case o.KillAfter < 0:
		return UsageError{fmt.Sprintf("--kill-after %v is negative", o.KillAfter)}
	case o.SkipCode < 0 || o.SkipCode > 255:
		return UsageError{fmt.Sprintf("--skip-code %d is outside 0..255", o.SkipCode)}
	case len(o.SlotFile) > len(o.Slots):
		return UsageError{"--slot-file without a matching --slots N"}
	case len(o.Slots) > 1 && len(o.SlotFile) != len(o.Slots):
		return UsageError{"several --slots need one --slot-file each, in the same order"}
	case o.FirstOf && o.CandidatesFrom == "":
		return UsageError{"--first-of needs --candidates-from FILE (or - for stdin)"}
	case !o.FirstOf && o.CandidatesFrom != "":
		return UsageError{"--candidates-from needs --first-of"}
	case o.FirstOf && (len(o.Paths) > 0 || o.PathsFrom != ""):
		return UsageError{"--first-of takes its paths from --candidates-from only: drop --paths and --paths-from (or repeat the paths in every set)"}
	case len(o.Paths) == 0 && o.PathsFrom == "" && len(o.Slots) == 0 && !o.FirstOf:
		return UsageError{"nothing to lock: give --paths, --paths-from or --slots"}
	case o.LockDir == "":
		return UsageError{"--lock-dir is empty"}
	}
	for _, n := range o.Slots {
		if n <= 0 {
			return UsageError{fmt.Sprintf("--slots %d: a pool needs at least 1 slot", n)}
		}
	}
	// The same --slot-file given k times takes k slots of one pool: more
	// than the pool has can never be held, and a waiter would wait for
	// nothing (and keep a slot reserved meanwhile).
	want, size := map[string]int{}, map[string]int{}
	for i, t := range o.SlotFile {
		want[t]++
		size[t] = max(size[t], o.Slots[i])
		if want[t] > size[t] {
			unit := "slots"
			if size[t] == 1 {
				unit = "slot"
			}
			return UsageError{fmt.Sprintf("--slot-file %s is given %d times, but its pool has %d %s: it can never take that many", t, want[t], size[t], unit)}
		}
	}
	// --paths values are split here, not by kong, so that the fast parser
	// and kong split alike (kong would also unescape "\,").
	var paths []string
	for _, v := range o.Paths {
		for _, p := range strings.Split(v, ",") {
			if p == "" {
				return UsageError{fmt.Sprintf("--paths %q has an empty entry (stray comma?)", v)}
			}
			paths = append(paths, p)
		}
	}
	o.Paths = paths
	return nil
}

// QuoteArgs renders a command for messages.
func QuoteArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
