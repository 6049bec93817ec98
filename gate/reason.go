//go:build linux

package gate

import (
	"fmt"

	"github.com/crongate/crongate/internal/safetext"
)

// CheckReason returns why s cannot be a pause reason, or nil. A reason is
// shown next to other text — in status's table, the skip message, the
// watchdog's alerts, the dashboard — so it must be one line of valid UTF-8
// without control characters (C0, DEL, C1, line and paragraph separators),
// bidirectional controls or a byte order mark (safetext.Check): with them a
// reason could recolour the terminal, forge a line or show another "until"
// than the real one. Every way to set a reason checks it: `cron-gate pause
// --reason` and the dashboard (internal/crongate, pause.go), the config's reason key,
// Config.Validate, and an etcd value (etcdpause). Reasons stored before
// this check are still read, and printed neutralised.
func CheckReason(s string) error {
	if err := safetext.Check(s); err != nil {
		return fmt.Errorf("the reason %w; write it on one line, without control characters or bidirectional controls", err)
	}
	return nil
}
