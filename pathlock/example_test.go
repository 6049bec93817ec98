package pathlock_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crongate/crongate/lockfile"
	"github.com/crongate/crongate/pathlock"
)

// The lock file of a post is the Python workers' own: sha256 of the
// resolved path, plus ".lock", so old and new processes exclude each other
// (python3 -c "import hashlib; print(hashlib.sha256(b'/srv/blog/posts/hello.ko.md').hexdigest())").
func ExampleLockName() {
	fmt.Println(pathlock.LockName("/srv/blog/posts/hello.ko.md"))
	// Output: 6ae843ab6cfd06d45925e2a8a4c7e2067c2a189febbbd5d67ee66ba4c4117c6a.lock
}

// A set of posts is taken all or nothing, in the sorted order every Python
// caller uses, and nothing is held after a failed try.
func ExampleSet() {
	dir, _ := os.MkdirTemp("", "pathlock-example-")
	defer os.RemoveAll(dir)
	posts := []string{filepath.Join(dir, "b.en.md"), filepath.Join(dir, "a.ko.md"), filepath.Join(dir, "a.ko.md")}
	canon, err := pathlock.CanonicalSet(posts) // resolved, sorted, unique
	if err != nil {
		fmt.Println(err)
		return
	}
	ld, err := lockfile.OpenDir(filepath.Join(dir, "locks"), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ld.Close()

	mine := pathlock.NewSet(ld, canon)
	defer mine.Close()
	fmt.Println("first:", mine.TryLock())

	other := pathlock.NewSet(ld, canon[:1]) // another holder wants a.ko.md
	defer other.Close()
	fmt.Println("second is busy:", other.TryLock() != nil)
	mine.Release()
	fmt.Println("after release:", other.TryLock())
	// Output:
	// first: <nil>
	// second is busy: true
	// after release: <nil>
}
