//go:build linux

package gateconf

// Declaring gates (`cron-gate adopt --declare`): new [gates.NAME] tables
// appended to a hand-written config, every other byte kept, under the
// config lock, as SetPaused edits it.

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/internal/runner"
	"github.com/crongate/crongate/internal/safetext"
)

// Declaration is a gate to declare, with its `interval` (0: none).
type Declaration struct {
	Name     string
	Interval time.Duration
}

// DeclarationText is the TOML DeclareGates appends for decls, with eol
// ending each line: a blank line, then a [gates.NAME] table with its
// interval, for each.
func DeclarationText(decls []Declaration, eol string) string {
	var b bytes.Buffer
	for _, d := range decls {
		b.WriteString(eol + "[" + safetext.TOMLKey("gates", d.Name) + "]" + eol)
		if d.Interval > 0 {
			b.WriteString(`interval = "` + runner.FormatDuration(d.Interval) + `"` + eol)
		}
	}
	return b.String()
}

// DeclareGates appends to the config at path a table for each of decls
// that it does not declare yet, and returns the names it added. The file
// must exist and be a valid config; its bytes are kept and the tables go
// at its end, in its line endings. The result is parsed again and must be
// the original config plus exactly these gates with these intervals, else
// nothing is written. Lock, read and atomic replacement are SetPaused's
// (a temporary file with the original's owner and mode, fsynced, renamed;
// redone if the file changed meanwhile).
func DeclareGates(path string, decls []Declaration, lockPath string) (added []string, err error) {
	for _, d := range decls {
		if err := gate.CheckName(d.Name); err != nil {
			return nil, fmt.Errorf("%s: %s", safetext.Where(path, 0), err)
		}
	}
	err = editUnderLock(path, lockPath, func(lock *configLock) error {
		added = nil
		cur, err := readLocked(path, lock)
		if err != nil {
			return err
		}
		var todo []Declaration
		for _, d := range decls {
			if cur.cfg.Gates[d.Name] == nil {
				todo = append(todo, d)
				added = append(added, d.Name)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		out, err := declareEdit(path, cur.data, cur.cfg, todo)
		if err != nil {
			return err
		}
		return editReplace(safetext.Where(path, 0), cur.target, cur.data, out, cur.v, lock)
	})
	if err != nil {
		return nil, err
	}
	return added, nil
}

// declareEdit is data with decls appended, checked (see DeclareGates).
func declareEdit(path string, data []byte, cfg *gate.Config, decls []Declaration) ([]byte, error) {
	sc, serr := editScan(data)
	if serr != nil {
		return nil, fmt.Errorf("%s: cron-gate cannot follow this line well enough to edit the file safely (%s); add the gates by hand",
			safetext.Where(path, serr.line), serr.msg)
	}
	for i := range sc.stmts {
		// gates = {...}: a [gates.NAME] table after it is not TOML (the
		// decoder takes it all the same), as for SetPaused.
		if st := &sc.stmts[i]; st.kind == stmtKey && editKeyEq(append(slices0(sc.tableOf(st)), st.key...), []string{"gates"}) {
			return nil, fmt.Errorf("%s: gates is written as an inline table, which cron-gate cannot edit safely; add the gates by hand",
				safetext.Where(path, st.line))
		}
	}
	eol := "\n"
	if sc.eol != "" {
		eol = sc.eol
	}
	var b bytes.Buffer
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteString(eol)
	}
	text := DeclarationText(decls, eol)
	if len(data) == 0 {
		text = text[len(eol):]
	}
	b.WriteString(text)
	got, err := Parse(path, b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: declaring the gates would make the file invalid (%s); nothing was changed, add them by hand",
			safetext.Where(path, 0), err)
	}
	want := editNormal(cfg)
	norm := editNormal(got)
	for _, d := range decls {
		g := norm.Gates[d.Name]
		if g == nil || g.Interval != d.Interval {
			return nil, fmt.Errorf("%s: the edit did not declare gate %s as asked; nothing was changed, add it by hand", safetext.Where(path, 0), d.Name)
		}
		want.Gates[d.Name] = g
	}
	if !reflect.DeepEqual(norm, want) {
		return nil, fmt.Errorf("%s: declaring the gates would have changed more than that; nothing was changed, add them by hand", safetext.Where(path, 0))
	}
	return b.Bytes(), nil
}
