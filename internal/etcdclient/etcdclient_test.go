package etcdclient

import (
	"reflect"
	"testing"
)

func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		ok       bool
	}{
		{nil, []string{DefaultEndpoint}, true},
		{[]string{"http://a:2379", "http://b:2379"}, []string{"http://a:2379", "http://b:2379"}, true},
		{[]string{"http://a:2379", ""}, nil, false},
	} {
		got, ok := Endpoints(c.in)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Endpoints(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for p, want := range map[string]bool{"/withlock": true, "/a/b": true, "": false, "/": false, "x": false, "/x/": false} {
		if ValidPrefix(p) != want {
			t.Errorf("ValidPrefix(%q) = %v, want %v", p, !want, want)
		}
	}
}

// New does not contact the cluster: a client for an address nobody
// listens on is created, and closes.
func TestNewIsLazy(t *testing.T) {
	cli, err := New([]string{"http://127.0.0.1:1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
