package tests

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/crongate/crongate/tests/testbin"
)

// TestPathsFromBounded feeds withlock --paths-from inputs that never end or
// could never be a list of paths: /dev/urandom and /dev/zero named as the
// file, the same on stdin, an endless pipe of one path, and an endless pipe
// of distinct paths. Each must end with 125 and one line saying why — a
// device is refused unopened, a NUL in line mode at the first one, an
// endless input at the documented limits (128 MiB read, 1,048,576 distinct
// entries) — and withlock's peak memory must stay bounded (under 512 MiB:
// the limits allow about 200). Before these limits, /dev/urandom grew to
// 2.5 GB and -0 /dev/zero never ended. A pipe that does end (a shell's
// <(command)) still works. The deadline only bounds a hang; no timing is
// asserted.
func TestPathsFromBounded(t *testing.T) {
	lockDir := filepath.Join(t.TempDir(), "locks")
	endless := func(line func(i int) []byte) func(w io.Writer) {
		return func(w io.Writer) {
			var buf []byte
			for i := 0; ; i++ {
				buf = append(buf, line(i)...)
				if len(buf) < 64<<10 {
					continue
				}
				if _, err := w.Write(buf); err != nil {
					return // withlock has stopped reading
				}
				buf = buf[:0]
			}
		}
	}
	device := func(name string) func(w io.Writer) {
		return func(w io.Writer) {
			f, err := os.Open(name)
			if err != nil {
				return
			}
			defer f.Close()
			io.Copy(w, f)
		}
	}
	cases := []struct {
		name  string
		args  []string
		stdin func(w io.Writer)
		want  string // regexp on stderr
	}{
		{"urandom-file", []string{"--paths-from", "/dev/urandom"}, nil,
			`^withlock: --paths-from: /dev/urandom is a character device; give a regular file, a pipe, or - for stdin\n$`},
		{"zero-file-null", []string{"-0", "--paths-from", "/dev/zero"}, nil,
			`^withlock: --paths-from: /dev/zero is a character device; `},
		{"urandom-stdin", []string{"--paths-from", "-"}, device("/dev/urandom"),
			`^withlock: --paths-from - \(stdin\): line [0-9]+ holds a NUL byte, which no path can \(a NUL-separated list needs -0\)\n$`},
		{"zero-stdin-null", []string{"-0", "--paths-from", "-"}, device("/dev/zero"),
			`^withlock: --paths-from - \(stdin\): more than 128 MiB; split the list\n$`},
		{"endless-same", []string{"--paths-from", "-"}, endless(func(int) []byte { return []byte("/srv/blog/post.md\n") }),
			`^withlock: --paths-from - \(stdin\): more than 128 MiB; split the list\n$`},
		{"endless-distinct", []string{"-0", "--paths-from", "-"}, endless(func(i int) []byte { return []byte("/srv/blog/p" + strconv.Itoa(i) + "\x00") }),
			`^withlock: --paths-from - \(stdin\): more than 1048576 distinct paths; split the list\n$`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"--lock-dir", lockDir}, c.args...)
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "withlock"), append(args, "--", "touch", filepath.Join(t.TempDir(), "ran"))...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var w io.WriteCloser
			if c.stdin != nil {
				var err error
				if w, err = cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if w != nil {
				go func() {
					c.stdin(w)
					w.Close()
				}()
			}
			err := cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("withlock %v still running after 60 s (killed); stderr: %.300s", c.args, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 125 {
				t.Errorf("withlock %v: %v, want exit 125; stderr: %.300s", c.args, err, stderr.String())
			}
			if !regexp.MustCompile(c.want).Match(stderr.Bytes()) {
				t.Errorf("withlock %v: stderr %q, want %s", c.args, stderr.String(), c.want)
			}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				t.Logf("peak RSS %d MiB", ru.Maxrss>>10)
				if ru.Maxrss > 512<<10 {
					t.Errorf("withlock %v: peak RSS %d MiB, want under 512 MiB", c.args, ru.Maxrss>>10)
				}
			}
		})
	}
	// A pipe that ends: a shell's process substitution (/dev/fd/N).
	if _, err := exec.LookPath("bash"); err == nil {
		out, err := exec.Command("bash", "-c", `"$0" --lock-dir "$1" --paths-from <(printf '/srv/a\n/srv/b\n') -- sh -c 'printf %s "$WITHLOCK_PATHS"'`,
			filepath.Join(binDir, "withlock"), lockDir).CombinedOutput()
		if err != nil || string(out) != `["/srv/a","/srv/b"]` {
			t.Errorf("--paths-from <(printf ...): %v %q, want the two paths held", err, out)
		}
	}
}

// TestListFromFIFO: a named FIFO given to --paths-from or
// --candidates-from is read as cat(1) reads it, waiting for a writer that
// opens it later (a queue printed by another job). It used to be opened
// non-blocking and read at once: end of file before any writer, so
// --first-of skipped with 75 ("the list is empty") and --paths-from
// failed with 125. The test writes only once withlock has the FIFO open
// (a non-blocking open for writing succeeds only then), and checks that
// withlock was still there to read it.
func TestListFromFIFO(t *testing.T) {
	for _, c := range []struct {
		name, write, want string
		args              []string
	}{
		{"candidates-from", "/srv/fifo/a\n/srv/fifo/b\n\n/srv/fifo/c\n", `0:["/srv/fifo/a","/srv/fifo/b"]`, []string{"--first-of", "--candidates-from"}},
		{"paths-from", "/srv/fifo/d\n", `:["/srv/fifo/d"]`, []string{"--paths-from"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "list")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(binDir, "withlock"), append(append([]string{"--lock-dir", filepath.Join(dir, "locks")}, c.args...),
				fifo, "--", "sh", "-c", `printf %s "$WITHLOCK_CANDIDATE:$WITHLOCK_PATHS"`)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var ended error
			w, err := testbin.OpenFIFOWriter(fifo, func() bool {
				select {
				case ended = <-exited:
					return true
				default:
					return false
				}
			}, 30*time.Second)
			if err != nil {
				cmd.Process.Kill()
				t.Fatalf("%v: withlock %v, stdout %q, stderr %q", err, ended, out.String(), errb.String())
			}
			if _, err := w.WriteString(c.write); err != nil {
				t.Fatal(err)
			}
			w.Close()
			select {
			case err := <-exited:
				if err != nil || out.String() != c.want || errb.Len() != 0 {
					t.Errorf("withlock %s FIFO: %v, stdout %q, stderr %q; want exit 0 and %q", c.name, err, out.String(), errb.String(), c.want)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("withlock still running 30 s after the writer closed the FIFO")
			}
		})
	}
}
