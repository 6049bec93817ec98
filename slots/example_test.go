package slots_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/crongate/crongate/slots"
)

// Two slots: two holders get one each, a third finds the pool full. The
// slot files are the ones a Python worker with the same template uses.
func ExamplePool() {
	dir, _ := os.MkdirTemp("", "slots-example-")
	defer os.RemoveAll(dir)
	template := filepath.Join(dir, "classifier-slot-{i}.lock")

	var pools []*slots.Pool
	for i := 0; i < 3; i++ {
		p, err := slots.Open(2, template, true)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer p.Close()
		pools = append(pools, p)
		if idx, err := p.TryLock(); err != nil {
			fmt.Println("holder", i, "skips:", err != nil)
		} else {
			fmt.Println("holder", i, "has slot", idx)
		}
	}
	pools[0].Release()
	idx, err := pools[2].TryLock()
	fmt.Println("after a release, holder 2 has slot", idx, err)
	// Output:
	// holder 0 has slot 0
	// holder 1 has slot 1
	// holder 2 skips: true
	// after a release, holder 2 has slot 0 <nil>
}
