// cron-gate dashboard: renders /api/summary and posts the buttons.
// Everything from the server is put in the page with textContent, never
// as HTML, and neutralised first (clean, cleanText): stored text — a pause
// reason, a journal's detail, a command's output — may hold control or
// bidirectional characters, which would reorder or hide what is shown
// around it. Such text also sits in <bdi> elements (iso), so even plain
// right-to-left text cannot spill its direction onto its neighbours.
// No inline script: the content security policy forbids it.
'use strict';
(function () {
  const REFRESH_MS = 5000;
  const LOGIN_HINT = 'open once the address ending in /?token=… that cron-gate serve printed when it started';

  // The session's key: the login redirects to /#session=KEY; the key is
  // kept in this origin's localStorage (another port of this host cannot
  // read it, though it receives the cookie) and sent with every API
  // request. It leaves the address bar at once.
  const KEY_NAME = 'cron-gate-session-key';
  const fromLogin = /^#session=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (fromLogin) {
    try { localStorage.setItem(KEY_NAME, fromLogin[1]); } catch (e) { /* storage off: read-only */ }
    history.replaceState(null, '', location.pathname + location.search);
  }
  function sessionKey() {
    try { return localStorage.getItem(KEY_NAME) || ''; } catch (e) { return ''; }
  }
  function forgetKey() {
    try { localStorage.removeItem(KEY_NAME); } catch (e) { /* nothing kept */ }
  }
  // Whether this browser may use the buttons: the server says it has a
  // session (a 401 says it no longer has), and the page has its key.
  const hasSession = document.querySelector('meta[name="can-act"]').content === '1';
  if (!hasSession) forgetKey();
  let canAct = hasSession && sessionKey() !== '';
  function headers(extra) {
    const h = Object.assign({}, extra);
    const k = sessionKey();
    if (k) h['X-CSRF-Token'] = k;
    return h;
  }

  // The characters internal/safetext never prints as they are: C0, DEL,
  // C1, the line and paragraph separators, the bidirectional controls and
  // the byte order mark. clean shows each as an escape (\n, \x1b,
  // \u202e) on one line; cleanText keeps line feeds and tabs.
  const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
  const UNSAFE_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
  const SHORT = { '\u0007': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u000b': '\\v' };
  function esc(c) {
    const n = c.charCodeAt(0);
    if (SHORT[c]) return SHORT[c];
    return n < 0x80 ? '\\x' + n.toString(16).padStart(2, '0') : '\\u' + n.toString(16).padStart(4, '0');
  }
  function clean(s) { return String(s).replace(UNSAFE, esc); }
  function cleanText(s) { return String(s).replace(UNSAFE_TEXT, esc); }
  // setTitle: a tooltip of the given lines, each one line (clean).
  function setTitle(node, ...lines) {
    node.title = lines.filter(l => l !== '' && l !== null && l !== undefined).map(clean).join('\n');
  }
  const tbody = document.getElementById('gates');
  const rows = new Map(); // gate name -> {tr, cells, form, output}
  let zone = { name: '', abbreviations: {} };
  let serverNow = 0; // the summary's "generated", ms
  let fetchedAt = 0; // when it arrived, ms (local clock)
  let busy = false;
  let again = false; // a refresh was asked for while one ran

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = clean(text);
    return e;
  }

  // iso: stored text in an isolating element.
  function iso(text) { return el('bdi', null, text); }

  // line: a span of pieces; strings are ours, nodes are (isolated) data.
  function line(cls, ...parts) {
    const e = el('span', cls);
    for (const p of parts) {
      if (p === '' || p === null || p === undefined) continue;
      e.appendChild(typeof p === 'string' ? document.createTextNode(clean(p)) : p);
    }
    return e;
  }

  // "2026-11-29T20:15:03.1+09:00" -> "11-29 20:15 KST": the wall clock as
  // the server wrote it in the configured zone, and that zone's name.
  function shortTime(s) {
    const m = /^\d{4}-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.exec(s || '');
    if (!m) return s || '';
    const ab = zone.abbreviations[m[5]] || (m[5] === 'Z' ? 'UTC' : 'UTC' + m[5]);
    return m[1] + '-' + m[2] + ' ' + m[3] + ':' + m[4] + ' ' + ab;
  }

  function now() { return serverNow + (Date.now() - fetchedAt); }

  function ago(s) {
    const t = Date.parse(s);
    if (isNaN(t)) return '';
    let d = Math.round((now() - t) / 1000);
    const future = d < 0;
    if (future) d = -d;
    let w;
    if (d < 60) w = d + 's';
    else if (d < 3600) w = Math.floor(d / 60) + 'm';
    else if (d < 48 * 3600) w = Math.floor(d / 3600) + 'h' + (d < 10 * 3600 && d % 3600 >= 60 ? Math.floor(d % 3600 / 60) + 'm' : '');
    else w = Math.floor(d / 86400) + 'd';
    return future ? 'in ' + w : w + ' ago';
  }

  // timeNode: the short time, "(5m ago)" below, the full timestamp in the
  // tooltip.
  function timeNode(s, extra) {
    const span = el('span');
    if (!s) { span.textContent = '-'; return span; }
    setTitle(span, s);
    span.appendChild(el('span', 'when', shortTime(s)));
    span.appendChild(line('sub', ago(s), extra ? ' · ' : '', extra ? iso(extra) : ''));
    return span;
  }

  function endWords(e) {
    if (!e) return '';
    let s = e.outcome || '';
    if (e.exit !== undefined && e.exit !== null) s += ' ' + e.exit;
    if (e.signal) s += ' ' + e.signal;
    return s;
  }

  function cond(g, name) {
    return (g.conditions || []).find(c => c.condition === name);
  }

  // stateOf: the status's state, and "stale" when the watchdog's last
  // check found the gate stale (the dashboard does not judge it again).
  function stateOf(g) {
    const st = cond(g, 'stale');
    if ((g.state === 'ok' || g.state === 'skipped' || g.state === 'never-run') && st && st.bad) return 'stale';
    return g.state;
  }

  function stateNode(g) {
    const state = stateOf(g);
    const wrap = el('span');
    const badge = el('span', 'state state-' + state, state);
    wrap.appendChild(badge);
    let sub = [];
    if (state === 'running' && g.running && g.running.length) {
      const r = g.running[0];
      sub = ['pid ' + (r.child_pid || r.pid) + ' for ' + ago(r.since).replace(' ago', '')];
      setTitle(badge, 'since ' + r.since + ' (run ' + r.run + ')');
    } else if (state === 'paused' && g.pause) {
      const p = g.pause;
      sub = [iso(p.by)];
      if (p.reason) sub.push(': ', iso(p.reason));
      if (p.until) sub.push(' · until ' + shortTime(p.until));
      setTitle(badge, p.who ? 'by ' + p.who : '', p.since ? 'since ' + p.since : '', p.until ? 'until ' + p.until : '');
    } else if (state === 'failing' && g.last_end) {
      sub = [iso(endWords(g.last_end))];
      if (g.consecutive_failures > 1) sub.push(' · ' + g.consecutive_failures + ' in a row');
      setTitle(badge, g.last_end.detail || '');
    } else if (state === 'error' && g.last_error) {
      sub = [iso(g.last_error.reason || 'error')];
      setTitle(badge, g.last_error.detail || '');
    } else if (state === 'skipped' && g.last_skip) {
      sub = [iso(g.last_skip.reason || '')];
    } else if (state === 'stale') {
      setTitle(badge, cond(g, 'stale').detail || '');
    }
    if (g.journal_error) sub.push(sub.length ? ' · ' : '', 'journal: ', iso(g.journal_error));
    if (sub.length) wrap.appendChild(line('sub', ...sub));
    return wrap;
  }

  function cadenceNode(g) {
    const scheds = g.schedules || [];
    if (!g.cadence) return el('span', 'sub', '-');
    const unread = scheds.some(s => !s.text);
    const span = el('span', 'cut' + (unread ? ' raw' : ''));
    span.appendChild(iso(g.cadence));
    // Each schedule's crontab and line ("/etc/cron.d/blog:3").
    const lines = scheds.map(s => s.expr + '  (' + (s.source || 'crontab line ' + s.line) + ')' + (s.error ? '  ' + s.error : ''));
    if (g.interval) lines.push('interval ' + g.interval);
    setTitle(span, ...(lines.length ? lines : [g.cadence]));
    return span;
  }

  function watchdogNode(g) {
    const wrap = el('span');
    const bad = (g.conditions || []).filter(c => c.bad || c.state !== 'ok');
    if (!g.conditions || !g.conditions.length) { wrap.appendChild(el('span', 'cond-ok', '-')); return wrap; }
    if (!bad.length) {
      const ok = el('span', 'cond-ok', 'ok');
      setTitle(ok, 'watched: ' + g.conditions.map(c => c.condition).join(', '));
      wrap.appendChild(ok);
      return wrap;
    }
    for (const c of bad) {
      const s = el('span', c.bad ? 'cond-bad sub' : 'sub', c.condition + ': ' + c.state + (c.count ? ' (' + c.count + ')' : ''));
      setTitle(s, c.since ? 'since ' + c.since : '', c.detail || '');
      wrap.appendChild(s);
    }
    return wrap;
  }

  function button(label, cls, fn) {
    const b = el('button', cls, label);
    b.type = 'button';
    b.addEventListener('click', fn);
    return b;
  }

  // actionButton: a button that changes state, disabled (with the way to
  // enable it in its tooltip) while this browser lacks the token.
  function actionButton(label, cls, title, fn) {
    const b = button(label, cls, fn);
    setTitle(b, title);
    if (!canAct) {
      b.disabled = true;
      setTitle(b, 'read-only: to ' + label + ', ' + LOGIN_HINT);
    }
    return b;
  }

  function actionsNode(g, r) {
    const wrap = el('span');
    wrap.appendChild(actionButton('pause', 'pause', '', () => { r.form.hidden = !r.form.hidden; if (!r.form.hidden) r.form.querySelector('input[name=reason]').focus(); }));
    if (g.pause && g.pause.by === 'command' && !g.config_paused) {
      wrap.appendChild(actionButton('resume', 'resume', '', () => post('/api/resume', { gate: g.name })));
    }
    if (g.config_paused) {
      wrap.appendChild(actionButton('force-resume', 'force-resume danger', 'lifts the pause set in the config file (paused = false, edited in place)', () => {
        if (window.confirm('Set paused = false for ' + g.name + ' in the config file?')) post('/api/force-resume', { gate: g.name });
      }));
    }
    wrap.appendChild(button('output', 'output', () => toggleOutput(g.name, r)));
    return wrap;
  }

  function makeForm(name) {
    const tr = el('tr', 'form');
    tr.hidden = true;
    tr.dataset.gate = name;
    const td = el('td');
    td.colSpan = 9;
    const reason = el('input');
    reason.name = 'reason'; reason.placeholder = 'reason'; reason.maxLength = 500;
    const dur = el('input');
    dur.name = 'duration'; dur.placeholder = 'for (2h, 3d)'; dur.maxLength = 20;
    const go = button('pause ' + name, 'pause-confirm', () => {
      post('/api/pause', { gate: name, reason: reason.value, duration: dur.value }).then(ok => {
        if (ok) { tr.hidden = true; reason.value = ''; dur.value = ''; }
      });
    });
    const cancel = button('cancel', 'cancel', () => { tr.hidden = true; });
    for (const n of [el('span', 'meta', 'Pause ' + name + ': '), reason, dur, go, cancel]) td.appendChild(n);
    tr.appendChild(td);
    return tr;
  }

  function makeOutput(name) {
    const tr = el('tr', 'output');
    tr.hidden = true;
    tr.dataset.gate = name;
    const td = el('td');
    td.colSpan = 9;
    td.appendChild(el('pre'));
    tr.appendChild(td);
    return tr;
  }

  async function toggleOutput(name, r) {
    if (!r.output.hidden) { r.output.hidden = true; return; }
    const pre = r.output.querySelector('pre');
    pre.textContent = 'loading…';
    r.output.hidden = false;
    try {
      const res = await fetch('/api/output?gate=' + encodeURIComponent(name), { credentials: 'same-origin', headers: headers() });
      const body = await res.json();
      if (!res.ok) { pre.textContent = clean(body.error || res.statusText); return; }
      if (!body.output) {
        pre.textContent = body.log_output ? '(no output kept yet)' : '(output is not kept: set log_output = true for this gate)';
      } else {
        // The command's own output: its lines and tabs kept, its escape
        // sequences and bidi controls shown, not obeyed; isolated.
        pre.replaceChildren();
        if (body.cut_bytes) pre.appendChild(document.createTextNode('[… ' + body.cut_bytes + ' earlier bytes not shown …]\n'));
        const out = el('bdi');
        out.textContent = cleanText(body.output.replace(/\r\n/g, '\n'));
        pre.appendChild(out);
      }
    } catch (e) {
      pre.textContent = clean('cannot load the output: ' + e);
    }
  }

  function render(s) {
    zone = s.time_zone || zone;
    serverNow = Date.parse(s.generated) || Date.now();
    fetchedAt = Date.now();
    document.getElementById('meta').textContent = 'times in ' + (zone.name || 'UTC') +
      (s.watchdog ? ' · watchdog checked ' + shortTime(s.watchdog.last_check) : ' · no watchdog check yet');
    document.getElementById('refreshed').textContent = 'updated ' + shortTime(s.generated);
    const warn = document.getElementById('warnings');
    warn.hidden = !(s.warnings && s.warnings.length);
    warn.replaceChildren(...(s.warnings || []).map(w => el('div', null, w)));
    document.getElementById('empty').hidden = s.gates.length > 0;
    const seen = new Set();
    let prev = null;
    for (const g of s.gates) {
      seen.add(g.name);
      let r = rows.get(g.name);
      if (!r) {
        const tr = el('tr', 'gate');
        tr.dataset.gate = g.name;
        const cells = {};
        for (const k of ['name', 'state', 'success', 'failure', 'skip', 'cadence', 'next', 'watchdog', 'actions']) {
          cells[k] = el('td', 'col-' + k + (k === 'success' || k === 'failure' || k === 'skip' || k === 'next' ? ' time' : ''));
          tr.appendChild(cells[k]);
        }
        r = { tr, cells, form: makeForm(g.name), output: makeOutput(g.name) };
        rows.set(g.name, r);
      }
      // Keep the rows in the summary's order, each followed by its form
      // and output rows (which survive refreshes).
      const anchor = prev ? prev.output.nextSibling : tbody.firstChild;
      if (r.tr !== anchor) tbody.insertBefore(r.tr, anchor);
      if (r.tr.nextSibling !== r.form) tbody.insertBefore(r.form, r.tr.nextSibling);
      if (r.form.nextSibling !== r.output) tbody.insertBefore(r.output, r.form.nextSibling);
      prev = r;
      fill(g, r);
    }
    for (const [name, r] of rows) {
      if (!seen.has(name)) { r.tr.remove(); r.form.remove(); r.output.remove(); rows.delete(name); }
    }
  }

  function set(td, node) {
    td.replaceChildren(node);
  }

  function fill(g, r) {
    const c = r.cells;
    r.tr.className = 'gate state-row-' + stateOf(g);
    const name = iso(g.name);
    set(c.name, name);
    if (!g.declared) c.name.appendChild(el('span', 'sub', 'not declared'));
    set(c.state, stateNode(g));
    set(c.success, timeNode(g.last_success && g.last_success.time));
    set(c.failure, timeNode(g.last_failure && g.last_failure.time, endWords(g.last_failure)));
    set(c.skip, timeNode(g.last_skip && g.last_skip.time, g.last_skip && g.last_skip.reason));
    set(c.cadence, cadenceNode(g));
    set(c.next, timeNode(g.next_run, g.next_run_from === 'interval' ? 'last start + interval' : ''));
    set(c.watchdog, watchdogNode(g));
    set(c.actions, actionsNode(g, r));
  }

  function message(text, isError) {
    const m = document.getElementById('message');
    m.textContent = clean(text);
    m.className = isError ? 'error' : '';
    m.hidden = false;
  }

  async function post(path, body) {
    try {
      const res = await fetch(path, {
        method: 'POST',
        credentials: 'same-origin',
        headers: headers({ 'Content-Type': 'application/json' }),
        body: JSON.stringify(body),
      });
      let data = {};
      try { data = await res.json(); } catch (e) { /* not JSON */ }
      if (res.status === 401) {
        // No (or no longer the) token: say how to get it, and show the
        // buttons disabled until then.
        message('Not allowed: ' + (data.error || 'this browser lacks the token') + '.', true);
        canAct = false;
        forgetKey();
        document.getElementById('readonly').hidden = false;
        document.getElementById('logout').hidden = true;
        for (const r of rows.values()) r.form.hidden = true;
        await refresh();
        return false;
      }
      if (!res.ok) {
        message(data.error || (res.status + ' ' + res.statusText), true);
        return false;
      }
      message(data.message || 'done', false);
      await refresh();
      return true;
    } catch (e) {
      message('request failed: ' + e, true);
      return false;
    }
  }

  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const res = await fetch('/api/summary', { credentials: 'same-origin', cache: 'no-store', headers: headers() });
      if (!res.ok) {
        let err = res.statusText;
        try { err = (await res.json()).error || err; } catch (e) { /* keep statusText */ }
        message('cannot refresh: ' + err, true);
        return;
      }
      render(await res.json());
      document.body.dataset.loaded = '1';
    } catch (e) {
      message('cannot refresh: ' + e, true);
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  async function logout() {
    try {
      await fetch('/api/logout', { method: 'POST', credentials: 'same-origin', headers: headers() });
    } catch (e) { /* the session ends with its expiry anyway */ }
    forgetKey();
    location.reload();
  }

  document.getElementById('readonly').hidden = canAct;
  const out = document.getElementById('logout');
  out.hidden = !hasSession;
  out.addEventListener('click', logout);
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
