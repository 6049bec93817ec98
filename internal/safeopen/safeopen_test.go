package safeopen

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crongate/crongate/tests/testbin"
)

// tempDir is t.TempDir with symlinks resolved and mode 0755, so that the
// walk's messages name real paths.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// needRoot skips a test that needs root (to make files owned by another
// user), unless CI is set: there it is required.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (chown to another user), and CI is set: it is required there")
	}
	t.Skip("needs root")
}

const nobody = 65534

func mustDir(t *testing.T, path string, o DirOptions) *Dir {
	t.Helper()
	d, err := OpenDir(path, o)
	if err != nil {
		t.Fatalf("OpenDir(%s): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// realPath is where d's descriptor leads, as the kernel says.
func realPath(t *testing.T, d *Dir) string {
	t.Helper()
	p, err := os.Readlink(d.ProcPath())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenDirCreates(t *testing.T) {
	root := tempDir(t)
	p := filepath.Join(root, "a", "b", "c")
	if _, err := OpenDir(p, DirOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir without Create: %v, want ErrNotExist", err)
	}
	old := unix.Umask(0)
	defer unix.Umask(old)
	d := mustDir(t, p, DirOptions{Create: true, Mode: 0o750})
	if got := realPath(t, d); got != p {
		t.Errorf("descriptor leads to %s, want %s", got, p)
	}
	for _, q := range []string{filepath.Join(root, "a"), p} {
		fi, err := os.Lstat(q)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: %v %v, want a 0750 directory", q, fi.Mode(), err)
		}
	}
	// Files go through the descriptor.
	f, err := d.OpenFile("x", os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	f.Close()
	if b, err := d.ReadFile("x", 5); string(b) != "hello" || err != nil {
		t.Errorf("ReadFile: %q %v", b, err)
	}
	if _, err := d.ReadFile("x", 4); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "is larger than 4 bytes") {
		t.Errorf("ReadFile over the limit: %v, want ErrTooLarge naming the limit", err)
	}
}

func TestOpenDirRelative(t *testing.T) {
	root := tempDir(t)
	t.Chdir(root)
	d := mustDir(t, "x/../y/./z", DirOptions{Create: true, Mode: 0o755})
	if got := realPath(t, d); got != filepath.Join(root, "y", "z") {
		t.Errorf("descriptor leads to %s", got)
	}
	// "x/.." needs x: created on the way, as the kernel would need it.
	if _, err := os.Stat(filepath.Join(root, "x")); err != nil {
		t.Errorf("x: %v", err)
	}
	// The working directory itself.
	d = mustDir(t, ".", DirOptions{})
	if got := realPath(t, d); got != root {
		t.Errorf("\".\" leads to %s", got)
	}
}

func TestOpenDirSymlinks(t *testing.T) {
	root := tempDir(t)
	real := filepath.Join(root, "real")
	os.MkdirAll(filepath.Join(real, "sub"), 0o755)
	os.Symlink("real", filepath.Join(root, "rel"))
	os.Symlink(real, filepath.Join(root, "abs"))
	os.Symlink("../real/sub", filepath.Join(real, "up"))
	for _, p := range []string{"rel/sub", "abs/sub", "real/up", "rel/up/..//sub"} {
		d := mustDir(t, filepath.Join(root, p), DirOptions{})
		if got := realPath(t, d); got != filepath.Join(real, "sub") {
			t.Errorf("%s leads to %s, want %s", p, got, filepath.Join(real, "sub"))
		}
	}
	// A symlink as the last component: followed unless NoFollowLast.
	mustDir(t, filepath.Join(root, "abs"), DirOptions{})
	if _, err := OpenDir(filepath.Join(root, "abs"), DirOptions{What: "lock dir", NoFollowLast: true}); !errors.Is(err, ErrUnsafe) ||
		err.Error() != "lock dir "+root+"/abs is a symlink; refusing to follow it" {
		t.Errorf("NoFollowLast on a symlink: %v", err)
	}
	// A loop: ELOOP after MaxLinks, not a hang.
	os.Symlink("loop2", filepath.Join(root, "loop1"))
	os.Symlink("loop1", filepath.Join(root, "loop2"))
	if _, err := OpenDir(filepath.Join(root, "loop1", "x"), DirOptions{Create: true, Mode: 0o755}); !errors.Is(err, unix.ELOOP) {
		t.Errorf("symlink loop: %v, want ELOOP", err)
	}
	// A dangling link with Create: the target's missing directory is
	// created where the (trusted) link points.
	os.Symlink("made", filepath.Join(root, "dangling"))
	mustDir(t, filepath.Join(root, "dangling", "in"), DirOptions{Create: true, Mode: 0o755})
	if _, err := os.Stat(filepath.Join(root, "made", "in")); err != nil {
		t.Errorf("dangling link: %v", err)
	}
	// A file on the way.
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	if _, err := OpenDir(filepath.Join(root, "file", "x"), DirOptions{What: "lock dir", Create: true}); !errors.Is(err, unix.ENOTDIR) ||
		!strings.Contains(err.Error(), "file is not a directory") {
		t.Errorf("a file on the way: %v", err)
	}
	if _, err := OpenDir(filepath.Join(root, "file"), DirOptions{What: "lock dir"}); err == nil ||
		err.Error() != "lock dir "+root+"/file is not a directory" {
		t.Errorf("a file as the dir: %v", err)
	}
}

func TestOpenDirPermissions(t *testing.T) {
	root := tempDir(t)
	ww := filepath.Join(root, "ww")
	os.Mkdir(ww, 0o755)
	os.Chmod(ww, 0o777)
	if _, err := OpenDir(ww, DirOptions{What: "lock dir"}); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "writable by everyone without the sticky bit") {
		t.Errorf("world-writable dir: %v", err)
	}
	if _, err := OpenDir(filepath.Join(ww, "sub"), DirOptions{What: "lock dir", Create: true, Mode: 0o755}); !errors.Is(err, ErrUnsafe) ||
		!strings.Contains(err.Error(), "its ancestor "+ww+" is writable by everyone") {
		t.Errorf("under a world-writable dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ww, "sub")); err == nil {
		t.Error("created a directory under a refused ancestor")
	}
	os.Chmod(ww, 0o777|os.ModeSticky)
	mustDir(t, filepath.Join(ww, "sub"), DirOptions{Create: true, Mode: 0o755})
	// TrustAny takes it all.
	os.Chmod(ww, 0o777)
	mustDir(t, filepath.Join(ww, "sub"), DirOptions{Trust: TrustAny})

	// Private: the caller's own, closed to others.
	priv := filepath.Join(root, "priv")
	if _, err := OpenDir(priv, DirOptions{Create: true, Mode: 0o700, Private: true}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(priv, 0o750)
	if _, err := OpenDir(priv, DirOptions{What: "cache dir", Private: true}); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "has mode 0750") {
		t.Errorf("group-readable private dir: %v", err)
	}
}

// TestOpenDirForeign: directories and symlinks of another user (nobody).
func TestOpenDirForeign(t *testing.T) {
	needRoot(t)
	root := tempDir(t)
	theirs := filepath.Join(root, "theirs")
	os.Mkdir(theirs, 0o755)
	os.Chown(theirs, nobody, nobody)
	victim := filepath.Join(root, "victim")
	os.Mkdir(victim, 0o755)

	if _, err := OpenDir(theirs, DirOptions{What: "lock dir"}); !errors.Is(err, ErrUnsafe) ||
		!strings.Contains(err.Error(), "lock dir "+theirs+" is owned by uid 65534, not by you (uid 0) or root") {
		t.Errorf("another user's dir: %v", err)
	}
	if _, err := OpenDir(filepath.Join(theirs, "locks"), DirOptions{What: "lock dir", Create: true, Mode: 0o755}); !errors.Is(err, ErrUnsafe) ||
		!strings.Contains(err.Error(), "its ancestor "+theirs+" is owned by uid 65534") {
		t.Errorf("under another user's dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(theirs, "locks")); err == nil {
		t.Error("created a directory in another user's dir")
	}
	// Their symlink to our directory: not followed.
	link := filepath.Join(root, "link")
	os.Symlink(victim, link)
	os.Lchown(link, nobody, nobody)
	if _, err := OpenDir(filepath.Join(link, "locks"), DirOptions{What: "lock dir", Create: true, Mode: 0o755}); !errors.Is(err, ErrUnsafe) ||
		!strings.Contains(err.Error(), link+" is a symlink owned by uid 65534; refusing to follow it") {
		t.Errorf("another user's symlink: %v", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) > 0 {
		t.Errorf("created %v through another user's symlink", ents)
	}
	// The same link owned by root: followed.
	os.Lchown(link, 0, 0)
	mustDir(t, filepath.Join(link, "locks"), DirOptions{Create: true, Mode: 0o755})
	// A relative path from a working directory under their directory.
	sub := filepath.Join(theirs, "cwd")
	os.Mkdir(sub, 0o755)
	t.Chdir(sub)
	if _, err := OpenDir("locks", DirOptions{What: "lock dir", Create: true, Mode: 0o755}); !errors.Is(err, ErrUnsafe) ||
		!strings.Contains(err.Error(), "its ancestor "+theirs+" is owned by uid 65534") {
		t.Errorf("relative path under another user's dir: %v", err)
	}
	// TrustAny reads it.
	mustDir(t, theirs, DirOptions{Trust: TrustAny})
}

// TestSpecialFiles: FIFOs, devices, sockets, directories and symlinks
// where a regular file should be are refused at once, never waited on.
func TestSpecialFiles(t *testing.T) {
	root := tempDir(t)
	d := mustDir(t, root, DirOptions{})
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(root, "zero"))
	os.Symlink("fifo", filepath.Join(root, "fifolink"))
	os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644)
	os.Symlink("file", filepath.Join(root, "filelink"))
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(root, "sock")}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fifo": "a FIFO", "zero": "a symlink", "fifolink": "a symlink", "filelink": "a symlink", "dir": "a directory", "sock": "a socket"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, kind := range want {
			msg := filepath.Join(root, name) + " is " + kind + ", not a regular file"
			if _, err := d.ReadFile(name, 1<<20); !errors.Is(err, ErrNotRegular) || err.Error() != msg {
				t.Errorf("ReadFile(%s): %v, want %q", name, err, msg)
			}
			for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_RDWR} {
				if f, err := d.OpenFile(name, flag, 0o644); !errors.Is(err, ErrNotRegular) {
					t.Errorf("OpenFile(%s, %#x): %v, want ErrNotRegular", name, flag, err)
					if f != nil {
						f.Close()
					}
				}
			}
		}
		// Outside a Dir: devices and FIFOs are never opened.
		for _, c := range []struct {
			path   string
			follow bool
			kind   string
		}{
			{"/dev/zero", true, "a character device"},
			{filepath.Join(root, "zero"), true, "a character device"},
			{filepath.Join(root, "zero"), false, "a symlink"},
			{filepath.Join(root, "fifo"), true, "a FIFO"},
			{filepath.Join(root, "fifolink"), false, "a symlink"},
			{filepath.Join(root, "dir"), true, "a directory"},
		} {
			if _, _, err := ReadFile(c.path, 1<<20, c.follow); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), " is "+c.kind+",") {
				t.Errorf("ReadFile(%s, follow=%v): %v, want %s", c.path, c.follow, err, c.kind)
			}
		}
		if b, _, err := ReadFile(filepath.Join(root, "filelink"), 1, true); string(b) != "x" || err != nil {
			t.Errorf("ReadFile through a symlink: %q %v", b, err)
		}
		if _, err := OpenStream("/dev/urandom"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenStream(/dev/urandom): %v, want ErrNotRegular", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a special file blocked an open or a read for 20 s")
	}
}

// TestOpenStreamFIFO: a named FIFO that no writer has opened yet is
// waited for, as cat(1) waits (a non-blocking read would say end of file
// at once: a queue written a moment later read as empty, and withlock
// --first-of skipped with 75); a writer that comes and goes without
// writing leaves it empty; an empty pipe whose writer is gone does not
// wait. Through a symlink, as OpenStream follows them.
func TestOpenStreamFIFO(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(root, "fifolink")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, write string }{{"writes", "a\nb\n"}, {"writes nothing", ""}} {
		t.Run(c.name, func(t *testing.T) {
			type opened struct {
				data string
				err  error
			}
			got := make(chan opened, 1)
			go func() {
				f, err := OpenStream(filepath.Join(root, "fifolink"))
				if err != nil {
					got <- opened{err: err}
					return
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				got <- opened{string(b), err}
			}()
			// Once OpenStream has the FIFO open (the reader is there),
			// a writer can open it without blocking: it must not have
			// returned before.
			var early opened
			w, err := testbin.OpenFIFOWriter(fifo, func() bool {
				select {
				case early = <-got:
					return true
				default:
					return false
				}
			}, 20*time.Second)
			if err != nil {
				t.Fatalf("%v: OpenStream gave %q, %v", err, early.data, early.err)
			}
			if _, err := w.WriteString(c.write); err != nil {
				t.Fatal(err)
			}
			w.Close()
			select {
			case r := <-got:
				if r.data != c.write || r.err != nil {
					t.Errorf("read %q, %v; want %q", r.data, r.err, c.write)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("OpenStream or the read still blocked 20 s after the writer closed")
			}
		})
	}
	t.Run("empty pipe, writer gone", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w.Close()
		done := make(chan error, 1)
		go func() {
			f, err := OpenStream("/proc/self/fd/" + strconv.Itoa(int(r.Fd())))
			if err == nil {
				var b []byte
				if b, err = io.ReadAll(f); len(b) != 0 {
					err = errors.New("read " + strconv.Quote(string(b)))
				}
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("an empty pipe whose writer is gone blocked for 20 s")
		}
	})
}

// TestOpenStreamPipe: a pipe with a writer (a shell's <(command)) is read
// to its end.
func TestOpenStreamPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.WriteString("a\nb\n")
		w.Close()
	}()
	f, err := OpenStream("/proc/self/fd/" + strconv.Itoa(int(r.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); string(b) != "a\nb\n" || err != nil {
		t.Errorf("read %q %v", b, err)
	}
}
