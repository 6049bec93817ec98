package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBrowsertest checks the layer the dashboard's browser tests stand on,
// so that none of their checks passes by seeing nothing: ConsoleErrors
// returns a content security policy violation, a failed request and a
// console.error, and then forgets them; a click that opens a confirm
// returns with the dialog open, and AlertText and AcceptAlert see and
// close it; keys go to the focused field; Eval passes its arguments and
// returns the script's value; and no chromium process outlives the test
// (Start's cleanup fails the test otherwise, and this checks it by hand
// too).
func TestBrowsertest(t *testing.T) {
	Need(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'")
		fmt.Fprint(w, `<!doctype html><title>t</title>
<script>console.log("inline: the policy must block this")</script>
<button id=ask>ask</button> <input id=f> <p id=answer></p>
<script src="/page.js"></script>`)
	})
	mux.HandleFunc("/page.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.getElementById('ask').onclick = () => {
	document.getElementById('answer').textContent = confirm('sure?') ? 'yes' : 'no';
};
console.error('an error of the page');
fetch('/missing');`)
	})
	mux.HandleFunc("/missing", http.NotFound)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var profile string
	t.Run("browser", func(t *testing.T) {
		b := Start(t, 800, 600)
		profile = b.profile
		if len(processesNaming(profile)) == 0 {
			t.Fatalf("no process names the profile %s: the leftover check would see nothing", profile)
		}
		b.Open(srv.URL + "/")
		var errs []string
		WaitFor(t, "the three console errors", 20*time.Second, func() bool {
			errs = append(errs, b.ConsoleErrors()...)
			return len(errs) >= 3
		})
		all := strings.Join(errs, "\n")
		for _, want := range []string{"Content Security Policy", "an error of the page", "/missing"} {
			if !strings.Contains(all, want) {
				t.Errorf("the console errors lack %q:\n%s", want, all)
			}
		}
		if again := b.ConsoleErrors(); len(again) != 0 {
			t.Errorf("ConsoleErrors did not forget what it returned: %q", again)
		}

		b.Click("#ask")
		var question string
		WaitFor(t, "the confirm", 10*time.Second, func() bool {
			var ok bool
			question, ok = b.AlertText()
			return ok
		})
		if question != "sure?" {
			t.Errorf("the dialog asks %q, want sure?", question)
		}
		b.AcceptAlert()
		WaitFor(t, "the answer yes", 10*time.Second, func() bool { return b.Text("#answer") == "yes" })
		if _, open := b.AlertText(); open {
			t.Errorf("a dialog is still open after AcceptAlert")
		}
		b.Click("#ask")
		WaitFor(t, "the confirm again", 10*time.Second, func() bool { _, ok := b.AlertText(); return ok })
		b.DismissAlert()
		WaitFor(t, "the answer no", 10*time.Second, func() bool { return b.Text("#answer") == "no" })

		b.Type("#f", "ab")
		b.Press("c" + KeyTab)
		var st struct {
			Value, Focus string
			Sum          int
		}
		b.Eval(`return {Value: document.getElementById('f').value, Focus: document.activeElement.id, Sum: arguments[0] + arguments[1].n};`, &st, 40, map[string]int{"n": 2})
		if st.Value != "abc" || st.Focus == "f" || st.Sum != 42 {
			t.Errorf("after typing ab, pressing c and Tab: %+v, want value abc, the focus moved on, sum 42", st)
		}
	})
	if left := processesNaming(profile); len(left) != 0 {
		t.Errorf("chromium processes left after the test: %v", left)
	}
}
