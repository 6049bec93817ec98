package tests

// Custom script commands added for the cron-gate suite (registered in
// scriptCmds, usable by every suite):
//
//	expand SRC DST                copy SRC to DST with $VAR / ${VAR} expanded
//	envfile VAR FILE              VAR = the content of FILE, spaces trimmed
//	[!] json [-count] FILE PATH [REGEX]   the JSON selected by PATH in FILE
//	                                      (or, with -count, how many values
//	                                      it selects) matches REGEX
//	waitjson [-count] FILE PATH REGEX     wait until it does
//
// PATH, for json and waitjson, selects values in FILE ("stdout" and
// "stderr" are the last command's output). FILE holds one JSON document or a
// stream of them (JSON Lines, e.g. a cron-gate journal); the selection starts
// as the list of documents and every dot-separated segment maps it:
//
//	key       the member key of each object (a number: the element of each array)
//	*         every element of each array (every member value of each object)
//	[k=v]     the objects whose member k, rendered as below, is v; arrays are
//	          searched element by element, so gates[name=x] picks gate x
//
// The path "." selects the documents themselves (json -count FILE . counts
// the records of a journal). A filter may follow a key without a dot (gates[state=paused].name) and be
// chained ([event=end][outcome=success]). The values selected are rendered
// one per line — strings as they are, numbers as written in the file,
// anything else as compact JSON — and REGEX is matched against that text
// (use (?m) for line anchors). With -count, REGEX is matched against the
// number of values selected instead. Examples:
//
//	exec cron-gate status --json
//	json stdout gates[name=g].state '^paused$'
//	json stdout gates[name=g].pause.by '^command$'
//	json -count state/gates/g/journal.jsonl [event=end] '^20$'
//	! json stdout gates[name=g].last_failure
//
// Without REGEX, json requires a non-empty selection and "! json" an empty
// one. "json FILE PATH REGEX" and "! json FILE PATH REGEX" require a
// non-empty selection whose rendered text does (does not) match.
//
// No assertion holds vacuously, whatever the polarity: a selection that is
// empty because the file is not what the script thinks (a misspelt key, a
// changed schema) fails. So "json" and "! json" with REGEX fail when PATH
// selects nothing, and an empty selection is accepted as the expected
// result ("! json FILE PATH", or -count matching 0) only when PATH's parent
// — PATH without its last segment, or the documents for a one-segment path
// — selects something: "! json stdout gates[name=g].last_failure" needs
// gate g to be there. A FILE that does not parse is a failure, for json and
// "! json" alike; waitjson keeps polling (a journal line may be half
// written) until waitDeadline.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdExpand implements
//
//	expand SRC DST
//
// It copies SRC (e.g. a file of the script's archive) to DST with $VAR and
// ${VAR} replaced by the script's environment, as exec would expand them in
// arguments: testscript writes archive files verbatim, so a config that must
// name $WORK is written as a template and expanded. A variable that is not
// set is an error, so that a typo cannot silently produce "/state".
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! expand")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: expand SRC DST")
	}
	var missing []string
	out := os.Expand(ts.ReadFile(args[0]), func(k string) string {
		v := ts.Getenv(k)
		if v == "" {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		ts.Fatalf("expand %s: variables not set: %s", args[0], strings.Join(missing, ", "))
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o666))
}

// cmdEnvfile implements
//
//	envfile VAR FILE
//
// It sets VAR to the content of FILE with leading and trailing white space
// removed, so that a value a command wrote (a PID, a run ID) can be used in
// later arguments and regular expressions.
func cmdEnvfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! envfile")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: envfile VAR FILE")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
}

// cmdJSON implements
//
//	[!] json [-count] FILE PATH [REGEX]
//
// (see the comment at the top of this file).
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	count := len(args) > 0 && args[0] == "-count"
	if count {
		args = args[1:]
	}
	if len(args) != 2 && len(args) != 3 || count && len(args) != 3 {
		ts.Fatalf("usage: [!] json FILE PATH [REGEX] | [!] json -count FILE PATH REGEX")
	}
	var re *regexp.Regexp
	if len(args) == 3 {
		var err error
		re, err = regexp.Compile(args[2])
		ts.Check(err)
	}
	vals, parent, err := jsonEval([]byte(ts.ReadFile(args[0])), args[1])
	if err != nil {
		ts.Fatalf("json %s: %v", args[0], err)
	}
	text, err := jsonCheck(neg, count, vals, parent, re)
	if err != nil {
		ts.Fatalf("json %s %s: %v", args[0], args[1], err)
	}
	ts.Logf("[json %s %s: %q]", args[0], args[1], text)
}

// cmdWaitjson implements
//
//	waitjson [-count] FILE PATH REGEX
//
// It polls FILE until json FILE PATH REGEX would succeed and fails after
// waitDeadline. A missing or unparsable FILE is polled again. FILE is a
// file: the last command's stdout and stderr cannot change, so they are
// refused.
func cmdWaitjson(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitjson")
	}
	count := len(args) > 0 && args[0] == "-count"
	if count {
		args = args[1:]
	}
	if len(args) != 3 {
		ts.Fatalf("usage: waitjson [-count] FILE PATH REGEX")
	}
	if args[0] == "stdout" || args[0] == "stderr" {
		ts.Fatalf("waitjson: %s cannot change; use json", args[0])
	}
	re, err := regexp.Compile(args[2])
	ts.Check(err)
	f := ts.MkAbs(args[0])
	last := "(file missing)"
	ok := poll(nil, func() bool {
		data, err := os.ReadFile(f)
		if err != nil {
			last = "(file missing)"
			return false
		}
		vals, parent, err := jsonEval(data, args[1])
		if err != nil {
			last = err.Error()
			return false
		}
		text, err := jsonCheck(false, count, vals, parent, re)
		if err != nil {
			last = fmt.Sprintf("%s (%v)", text, err)
			return false
		}
		return true
	})
	if !ok {
		ts.Fatalf("waitjson %s %s: after %v still %q, want a match of %q%s", args[0], args[1], waitDeadline, last, args[2], bgStatus(ts))
	}
}

// jsonCheck applies the json command's rules (see the top of this file) to
// a selection of vals whose parent selects parent values; re is nil when
// no REGEX was given. It returns the text the assertion was made on (the
// rendered values, or their number with count), and an error saying why
// the assertion fails, vacuous ones included.
func jsonCheck(neg, count bool, vals []any, parent int, re *regexp.Regexp) (string, error) {
	text := jsonRender(vals)
	if count {
		text = strconv.Itoa(len(vals))
	}
	switch {
	case len(vals) == 0 && !count && (re != nil || !neg):
		return text, errors.New("selects nothing")
	case len(vals) == 0 && parent == 0:
		return text, errors.New("selects nothing, and neither does its parent: that would hold for any file")
	case re == nil && neg && len(vals) > 0:
		return text, fmt.Errorf("selects %q, want nothing", text)
	case re != nil && !neg && !re.MatchString(text):
		return text, fmt.Errorf("%q does not match %q", text, re)
	case re != nil && neg && re.MatchString(text):
		return text, fmt.Errorf("%q matches %q", text, re)
	}
	return text, nil
}

// jsonEval parses data (one document or a stream) and returns the values
// path selects and how many values its parent selects (the path without
// its last segment; the documents themselves for a path of one segment or
// none).
func jsonEval(data []byte, path string) (vals []any, parent int, err error) {
	segs, err := parseJSONPath(path)
	if err != nil {
		return nil, 0, err
	}
	docs, err := jsonDocs(data)
	if err != nil {
		return nil, 0, err
	}
	if len(segs) == 0 {
		return docs, 0, nil
	}
	up := jsonApply(docs, segs[:len(segs)-1])
	return jsonApply(up, segs[len(segs)-1:]), len(up), nil
}

// jsonSeg is one segment of a json PATH.
type jsonSeg struct {
	kind string // "key", "all", "filter"
	key  string // key, or the filter's member
	val  string // the filter's value
}

func parseJSONPath(path string) ([]jsonSeg, error) {
	var segs []jsonSeg
	i := 0
	for i < len(path) {
		switch path[i] {
		case '.':
			i++
			continue
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", path)
			}
			k, v, ok := strings.Cut(path[i+1:i+end], "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("path %q: filter %q is not [key=value]", path, path[i:i+end+1])
			}
			segs = append(segs, jsonSeg{kind: "filter", key: k, val: v})
			i += end + 1
			continue
		}
		j := i
		for j < len(path) && path[j] != '.' && path[j] != '[' {
			j++
		}
		switch tok := path[i:j]; {
		case strings.ContainsAny(tok, "]="):
			// A filter value with "]" in it ends the filter early and
			// leaves the rest as a key that selects nothing.
			return nil, fmt.Errorf("path %q: %q is not a key (a filter value cannot contain ])", path, tok)
		case tok == "*":
			segs = append(segs, jsonSeg{kind: "all"})
		default:
			segs = append(segs, jsonSeg{kind: "key", key: tok})
		}
		i = j
	}
	return segs, nil
}

// jsonSelect parses data (one document or a stream) and applies path.
func jsonSelect(data []byte, path string) ([]any, error) {
	vals, _, err := jsonEval(data, path)
	return vals, err
}

// jsonDocs parses one JSON document or a stream of them.
func jsonDocs(data []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var docs []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not JSON (document %d): %v", len(docs)+1, err)
		}
		docs = append(docs, v)
	}
}

// jsonApply maps the selection cur through segs.
func jsonApply(cur []any, segs []jsonSeg) []any {
	for _, s := range segs {
		var next []any
		switch s.kind {
		case "key":
			for _, v := range cur {
				switch v := v.(type) {
				case map[string]any:
					if e, ok := v[s.key]; ok {
						next = append(next, e)
					}
				case []any:
					if n, err := strconv.Atoi(s.key); err == nil && n >= 0 && n < len(v) {
						next = append(next, v[n])
					}
				}
			}
		case "all":
			for _, v := range cur {
				switch v := v.(type) {
				case []any:
					next = append(next, v...)
				case map[string]any:
					keys := make([]string, 0, len(v))
					for k := range v {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						next = append(next, v[k])
					}
				}
			}
		case "filter":
			for _, v := range cur {
				cands := []any{v}
				if a, ok := v.([]any); ok {
					cands = a
				}
				for _, c := range cands {
					if m, ok := c.(map[string]any); ok {
						if e, ok := m[s.key]; ok && jsonRender([]any{e}) == s.val {
							next = append(next, m)
						}
					}
				}
			}
		}
		cur = next
	}
	return cur
}

// jsonRender renders values one per line: strings raw, numbers as written,
// the rest as compact JSON.
func jsonRender(vals []any) string {
	lines := make([]string, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case string:
			lines[i] = v
		case json.Number:
			lines[i] = v.String()
		default:
			b, err := json.Marshal(v)
			if err != nil {
				lines[i] = fmt.Sprint(v)
			} else {
				lines[i] = string(b)
			}
		}
	}
	return strings.Join(lines, "\n")
}
