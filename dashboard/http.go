package dashboard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/crongate/crongate/gate"
	"github.com/crongate/crongate/watch"
)

//go:embed assets
var assets embed.FS

var pageTmpl = template.Must(template.ParseFS(assets, "assets/index.html"))

// tokenCookie holds the auth token after /?token=TOKEN.
const tokenCookie = "cron_gate_token"

// csrfHeader is the header POSTs echo the page's CSRF token in.
const csrfHeader = "X-CSRF-Token"

// The content security policy: everything from this origin only, no
// inline script or style, no framing, forms and fetches to this origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

type route struct {
	method string // GET (HEAD too) or POST
	public bool   // no auth token needed
	fn     func(http.ResponseWriter, *http.Request)
}

func (h *handler) routes() {
	h.mux = http.NewServeMux()
	add := func(path string, rt route) {
		h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { h.dispatch(w, r, rt) })
	}
	add("/{$}", route{method: "GET", fn: h.page})
	add("/assets/app.js", route{method: "GET", public: true, fn: h.asset("assets/app.js", "text/javascript; charset=utf-8")})
	add("/assets/app.css", route{method: "GET", public: true, fn: h.asset("assets/app.css", "text/css; charset=utf-8")})
	add("/assets/favicon.svg", route{method: "GET", public: true, fn: h.asset("assets/favicon.svg", "image/svg+xml")})
	add("/healthz", route{method: "GET", public: true, fn: h.healthz})
	add("/metrics", route{method: "GET", fn: h.metrics})
	add("/api/summary", route{method: "GET", fn: h.apiSummary})
	add("/api/output", route{method: "GET", fn: h.apiOutput})
	add("/api/csrf", route{method: "GET", fn: h.apiCSRF})
	add("/api/pause", route{method: "POST", fn: h.action(actPause)})
	add("/api/resume", route{method: "POST", fn: h.action(actResume)})
	add("/api/force-resume", route{method: "POST", fn: h.action(actForceResume)})
	// Everything else: 404 in the same one-line format as every error
	// (the mux's own is plain text).
	h.mux.HandleFunc("/", h.notFound)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	fail(w, r, http.StatusNotFound, fmt.Sprintf("no such page: %s", short(r.URL.Path, 100)))
}

// cleanPath is the path the mux would redirect to: path.Clean, keeping a
// trailing slash.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// ServeHTTP sets the headers every answer carries, refuses foreign Host
// headers, and turns a panic into a 500.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Printf("panic serving %s %s: %v\n%s", r.Method, r.URL.Path, p, debug.Stack())
			// If the answer has begun this is lost; the client sees a
			// cut answer, which is all that is left to do.
			fail(w, r, http.StatusInternalServerError, "internal error; see the server's log")
		}
	}()
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
	if h.open && !loopbackHost(r.Host) {
		// Without a token only loopback names are served: a page on
		// another site whose name was made to resolve to 127.0.0.1 (DNS
		// rebinding) is then refused instead of being "same origin".
		fail(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("host %q is not served: without an auth token the dashboard answers only to localhost and loopback addresses", r.Host))
		return
	}
	if r.Method != http.MethodConnect && cleanPath(r.URL.Path) != r.URL.Path {
		// /assets/../x, //api/summary: the mux would redirect to the
		// cleaned path; no page of the dashboard is reached that way.
		h.notFound(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// dispatch checks the method, the auth and, for POST, the origin and the
// CSRF token, then runs the route.
func (h *handler) dispatch(w http.ResponseWriter, r *http.Request, rt route) {
	switch {
	case rt.method == "GET" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
	case rt.method == r.Method:
	default:
		allow := rt.method
		if allow == "GET" {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		fail(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, rt.method))
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		// Always answered by a redirect (or a 401): the token must not
		// stay in the address bar, authorised already or not.
		h.login(w, r)
		return
	}
	bearer := false
	// With a Token every route but the public ones needs it; without
	// one (loopback) reads are open and state changes need the action
	// token.
	if !rt.public && (!h.open || r.Method == http.MethodPost) {
		ok, viaHeader := h.authorized(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cron-gate"`)
			msg := "this dashboard needs its auth token: open /?token=TOKEN once in the browser, or send Authorization: Bearer TOKEN"
			if h.open {
				msg = "pausing and resuming need the dashboard's action token: open the address ending in /?token=… that cron-gate serve printed when it started, once in this browser (again after every restart of cron-gate serve), or send Authorization: Bearer TOKEN"
			}
			fail(w, r, http.StatusUnauthorized, msg)
			return
		}
		bearer = viaHeader
	}
	if r.Method == http.MethodPost {
		if err := sameOrigin(r); err != nil {
			fail(w, r, http.StatusForbidden, err.Error())
			return
		}
		// A browser never adds an Authorization header by itself, so a
		// request that carries the token there is not forged; every
		// other POST must echo the page's CSRF token.
		if !bearer && !equal(r.Header.Get(csrfHeader), h.csrf) {
			fail(w, r, http.StatusForbidden, "missing or wrong "+csrfHeader+" header: reload the page (scripts: GET /api/csrf)")
			return
		}
	}
	rt.fn(w, r)
}

// authorized reports whether the request carries the token (Token, else
// the action token), and whether it did so in the Authorization header.
func (h *handler) authorized(r *http.Request) (ok, viaHeader bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, _ := strings.Cut(a, " ")
		return strings.EqualFold(scheme, "Bearer") && equal(strings.TrimSpace(tok), h.token), true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && equal(c.Value, h.token) {
		return true, false
	}
	return false, false
}

// login checks /?token=TOKEN, sets the cookie and redirects to / so that
// the token leaves the address bar and the history; a wrong token is a
// 401 (and the cookie, if any, is left alone).
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if !equal(r.URL.Query().Get("token"), h.token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cron-gate"`)
		msg := "wrong token"
		if h.open {
			msg = "wrong token: use the address that cron-gate serve printed when it last started (the action token changes at every start)"
		}
		fail(w, r, http.StatusUnauthorized, msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: h.token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secureRequest(r), MaxAge: 30 * 24 * 3600})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// secureRequest reports whether the auth cookie is to be Secure (sent
// over HTTPS only): TLS here, a TLS proxy's X-Forwarded-Proto: https, or
// any Host that is not loopback — off loopback the README asks for a TLS
// proxy, which keeps the Host header and need not say the protocol, so
// r.TLS is nil there. Loopback (ssh -L, the browser on the machine) is
// plain HTTP.
func secureRequest(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") || !loopbackHost(r.Host)
}

// equal compares two secrets in constant time (whatever their lengths).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1 && b != ""
}

// sameOrigin refuses a request a browser sent from another site: by
// Sec-Fetch-Site when the browser sends it, else by Origin, else by
// Referer, each against the Host header. A request with none of them does
// not come from a browser's page (curl, scripts) and passes this check.
func sameOrigin(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		if s == "same-origin" {
			return nil
		}
		return fmt.Errorf("cross-site request refused (Sec-Fetch-Site: %s)", s)
	}
	check := func(hdr, v string) error {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) || (u.Scheme != "http" && u.Scheme != "https") {
			return fmt.Errorf("cross-origin request refused (%s %q is not this site, %s)", hdr, short(v, 100), r.Host)
		}
		return nil
	}
	if o := r.Header.Get("Origin"); o != "" {
		return check("Origin", o)
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		return check("Referer", ref)
	}
	return nil
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost (or a name under .localhost) or a loopback IP.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// fail answers an error: one line, JSON {"error": ...} under /api/,
// plain text elsewhere.
func fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	msg = oneLine(msg)
	w.Header().Del("Content-Length")
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, "cron-gate serve: "+msg)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(append(data, '\n'))
}

func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)), " ")
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	// Whether this browser may use the buttons: with a Token, it got
	// here with it; without, it must have the action token's cookie.
	canAct, _ := h.authorized(r)
	err := pageTmpl.Execute(&b, struct {
		CSRF, Zone string
		CanAct     bool
	}{h.csrf, h.loc.String(), canAct || !h.open})
	if err != nil {
		h.log.Printf("page: %v", err)
		fail(w, r, http.StatusInternalServerError, "cannot render the page")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func (h *handler) asset(name, ctype string) func(http.ResponseWriter, *http.Request) {
	data, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		// The same binary always serves the same bytes; revalidation
		// is cheap, and a new binary is seen at once.
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	}
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

func (h *handler) apiCSRF(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"header": csrfHeader, "token": h.csrf})
}

func (h *handler) apiSummary(w http.ResponseWriter, r *http.Request) {
	s, err := h.summary()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	cfg, err := h.config()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	rep, err := gate.Status(cfg, h.now())
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	st, err := watch.ReadState(cfg)
	if err != nil {
		st = nil // the gates' metrics are still worth having
		h.log.Printf("metrics: %v", err)
	}
	var b bytes.Buffer
	if err := watch.WriteMetrics(&b, cfg, rep, st); err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// maxOutput bounds the output tail /api/output returns.
const maxOutput = 64 << 10

func (h *handler) apiOutput(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("gate")
	if err := gate.CheckName(name); err != nil {
		fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	cfg, err := h.config()
	if err != nil {
		fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	// Only the tail is read: the log can be twice log_max_bytes long.
	tail, err := gate.LastOutputTail(gate.StateDirFor(cfg), name, maxOutput)
	if err != nil {
		fail(w, r, http.StatusInternalServerError, fmt.Sprintf("output of gate %s: %v", name, err))
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Gate      string `json:"gate"`
		LogOutput bool   `json:"log_output"`
		Output    string `json:"output"`
		Cut       int64  `json:"cut_bytes,omitempty"`
	}{name, cfg.Gate(name).LogOutput, strings.ToValidUTF8(tail.Text, "\uFFFD"), tail.Cut})
}
