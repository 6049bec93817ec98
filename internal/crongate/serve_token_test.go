package crongate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crongate/crongate/gate"
)

// A token_file is read within 4 KiB (docs/security.md): a token of
// exactly 4096 bytes is used, one byte more is refused naming the limit.
func TestServeTokenBounded(t *testing.T) {
	t.Setenv("CRON_GATE_TOKEN", "")
	f := filepath.Join(t.TempDir(), "token")
	cfg := gate.DefaultConfig()
	cfg.Serve.TokenFile = f
	for _, size := range []int{4096, 4097} {
		if err := os.WriteFile(f, []byte(strings.Repeat("t", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		tok, err := serveToken(cfg)
		if size <= 4096 && (err != nil || len(tok) != size) {
			t.Errorf("a %d-byte token: %d bytes, %v; want it whole", size, len(tok), err)
		}
		if size > 4096 && (err == nil || !strings.Contains(err.Error(), "is larger than 4 KiB")) {
			t.Errorf("a %d-byte token: %d bytes, %v; want an error naming 4 KiB", size, len(tok), err)
		}
	}
}
