package etcdclient

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// Diagnose names why an endpoint gave no answer: each cause as a real
// listener (or none) on loopback shows it.
func TestDiagnose(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never speaks
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// A TLS server speaking HTTP/2, as a member does, with a
	// certificate no CA here signed.
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.EnableHTTP2 = true
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tlsAddr := strings.TrimPrefix(tlsSrv.URL, "https://")
	sock := filepath.Join(t.TempDir(), "absent.sock")

	for _, c := range []struct {
		eps  []string
		want []string
	}{
		{[]string{"unix://" + sock}, []string{"no such file or directory"}},
		{[]string{"http://" + silent.Addr().String()}, []string{"accepts connections but sends nothing"}},
		{[]string{"https://" + tlsAddr}, []string{"TLS:", "certificate"}},
		{[]string{"http://" + tlsAddr}, []string{"does not speak plain HTTP/2", "https://"}},
		{[]string{"http://nonexistent.invalid:2379"}, []string{"nonexistent.invalid", "DNS"}},
		// A control character in an endpoint reaches no terminal raw.
		{[]string{"unix://" + sock, "unix://" + sock + "\x1b[2J", "http://" + silent.Addr().String()}, []string{"no such file"}},
		// Two endpoints, two causes: each named with its endpoints.
		{[]string{"unix://" + sock, "http://" + silent.Addr().String()},
			[]string{"unix://" + sock + ": no such file", "http://" + silent.Addr().String() + ": accepts"}},
	} {
		cli, err := New(c.eps, 0, Security{}, nil)
		if err != nil {
			t.Fatalf("%v: %v", c.eps, err)
		}
		got := cli.Diagnose()
		cli.Close()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: Diagnose says %q, want %q in it", c.eps, got, w)
			}
		}
		if strings.ContainsAny(got, "\n\x1b") {
			t.Errorf("%v: Diagnose says more than one line, or a raw control character: %q", c.eps, got)
		}
	}
}
