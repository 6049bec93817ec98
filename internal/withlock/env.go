//go:build linux

package withlock

import (
	"fmt"
	"os"
	"strconv"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// MaxEnvPaths bounds WITHLOCK_PATHS: Linux refuses to exec with a single
// environment string over 128 KiB (MAX_ARG_STRLEN), so a longer list is
// handed over in a memory file instead.
const MaxEnvPaths = 64 << 10

// PathsEnv returns the environment entries that tell the command which
// paths it holds, and a file the command must inherit (nil if none). fd is
// the descriptor number that file will have in the command.
//
// The list is a JSON array. Bytes that are not UTF-8 are written as the
// lone surrogates \udc80-\udcff, as Python's surrogateescape does, so that
// json.loads() followed by os.fsencode() gives back the exact bytes.
func PathsEnv(paths []string, fd int) ([]string, *os.File, error) {
	js := JSONPaths(paths)
	if len(js) <= MaxEnvPaths {
		return []string{"WITHLOCK_PATHS=" + string(js)}, nil, nil
	}
	mfd, err := unix.MemfdCreate("withlock-paths", 0)
	if err != nil {
		return nil, nil, fmt.Errorf("hand over %d paths: %w", len(paths), err)
	}
	f := os.NewFile(uintptr(mfd), "withlock-paths")
	if _, err := f.Write(js); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("hand over %d paths: %w", len(paths), err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return []string{"WITHLOCK_PATHS_FD=" + strconv.Itoa(fd)}, f, nil
}

// JSONPaths encodes paths as a JSON array, keeping non-UTF-8 bytes (see
// PathsEnv).
func JSONPaths(paths []string) []byte {
	const hex = "0123456789abcdef"
	b := []byte{'['}
	for i, p := range paths {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(p); {
			r, n := utf8.DecodeRuneInString(p[j:])
			switch {
			case r == utf8.RuneError && n == 1:
				b = append(b, `\udc`...)
				b = append(b, hex[p[j]>>4], hex[p[j]&15])
			case r == '"' || r == '\\':
				b = append(b, '\\', byte(r))
			case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
				b = append(b, `\u`...)
				b = append(b, hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
			default:
				b = append(b, p[j:j+n]...)
			}
			j += n
		}
		b = append(b, '"')
	}
	return append(b, ']')
}
