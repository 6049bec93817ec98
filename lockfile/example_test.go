package lockfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crongate/crongate/lockfile"
)

// A lock file is opened inside a checked lock dir and locked without
// blocking; a busy lock is a result, not a failure. The file is never
// deleted.
func ExampleDir_Open() {
	dir, _ := os.MkdirTemp("", "lockfile-example-")
	defer os.RemoveAll(dir)
	ld, err := lockfile.OpenDir(filepath.Join(dir, "locks"), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ld.Close()

	a, _ := ld.Open("job.lock")
	defer a.Close()
	b, _ := ld.Open("job.lock") // another open file description: another holder
	defer b.Close()

	ok, err := a.TryLock()
	fmt.Println("a:", ok, err)
	ok, err = b.TryLock()
	fmt.Println("b:", ok, err)
	// Output:
	// a: true <nil>
	// b: false <nil>
}
