//go:build linux

package gateconf

import "github.com/crongate/crongate/gate"

// LoadGate is Load for the run path: gate.LookupGate's cache, and on a miss
// the file decoded and validated by Parse and then cached. It returns a
// Config holding the global settings and at most the one gate asked for;
// an invalid config is refused exactly as by Load.
func LoadGate(path string, missingOK bool, name string) (*gate.Config, error) {
	cfg, miss, err := gate.LookupGate(path, missingOK, name)
	if cfg != nil || err != nil {
		return cfg, err
	}
	full, err := Parse(path, miss.Data)
	if err != nil {
		return nil, err
	}
	return miss.Store(full), nil
}
