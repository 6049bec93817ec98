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
  const NOTE_MS = 8000;     // a success message clears itself after this
  const ERROR_MS = 20000;   // an action's error message too
  const LOGIN_HINT = 'open once the address ending in /?token=… that cron-gate serve printed when it started';
  const COLS = 7;

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
  // Plain HTTP to another machine: the session cookie is Secure, so the
  // browser drops it; say what works instead of repeating the login.
  const loopback = /^(localhost|.*\.localhost|127(\.\d+){3}|\[::1\])$/i.test(location.hostname);
  const plainHTTP = location.protocol === 'http:' && !loopback;

  // The characters internal/safetext never prints as they are: C0, DEL,
  // C1, the line and paragraph separators, the bidirectional controls and
  // the byte order mark. clean shows each as an escape (\n, \x1b,
  // \u202e) on one line; cleanText keeps line feeds and tabs.
  const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
  const UNSAFE_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
  const SHORT = { '\u0007': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u000b': '\\v' };
  // Terminal escape sequences in a command's output (colours, titles):
  // removed, so the output reads as text. What is left unsafe is escaped.
  const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
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
  const rows = new Map(); // gate name -> {tr, cells, form, output, cat}
  let zone = { name: '', abbreviations: {} };
  let serverNow = 0; // the summary's "generated", ms
  let fetchedAt = 0; // when it arrived, ms (local clock)
  let genOffset = ''; // the summary's offset, "+09:00"
  let busy = false;
  let again = false; // a refresh was asked for while one ran
  let filter = '';   // the summary button pressed: show only that category

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
    return m[1] + '-' + m[2] + ' ' + m[3] + ':' + m[4] + ' ' + abbr(m[5]);
  }
  function abbr(off) {
    return zone.abbreviations[off] || (off === 'Z' ? 'UTC' : 'UTC' + off);
  }

  // epochTime: a time given in seconds since the epoch (the recent
  // attempts) in the page's zone, as shortTime prints: the zone's offset
  // at that time from the browser's zone data when the zone has an IANA
  // name, else the summary's own offset.
  let offsetFmt = null;
  function epochTime(sec) {
    const d = new Date(sec * 1000);
    let off = genOffset || 'Z';
    if (zone.name && zone.name !== 'Local' && offsetFmt === null) {
      try {
        offsetFmt = new Intl.DateTimeFormat('en-US', { timeZone: zone.name, timeZoneName: 'longOffset' });
      } catch (e) { offsetFmt = false; }
    }
    if (offsetFmt) {
      const part = offsetFmt.formatToParts(d).find(p => p.type === 'timeZoneName');
      const m = part && /^GMT(?:([+-]\d{2}):?(\d{2}))?$/.exec(part.value);
      if (m) off = m[1] ? m[1] + ':' + m[2] : 'Z';
    }
    let mins = 0;
    if (off !== 'Z') mins = (off[0] === '-' ? -1 : 1) * (parseInt(off.slice(1, 3), 10) * 60 + parseInt(off.slice(4, 6), 10));
    const w = new Date(d.getTime() + mins * 60000);
    const p = n => String(n).padStart(2, '0');
    return p(w.getUTCMonth() + 1) + '-' + p(w.getUTCDate()) + ' ' + p(w.getUTCHours()) + ':' + p(w.getUTCMinutes()) + ' ' + abbr(off);
  }

  function now() { return serverNow + (Date.now() - fetchedAt); }

  function span(d) {
    if (d < 60) return d + 's';
    if (d < 3600) return Math.floor(d / 60) + 'm';
    if (d < 48 * 3600) return Math.floor(d / 3600) + 'h' + (d < 10 * 3600 && d % 3600 >= 60 ? Math.floor(d % 3600 / 60) + 'm' : '');
    return Math.floor(d / 86400) + 'd';
  }

  function ago(s) {
    const t = Date.parse(s);
    if (isNaN(t)) return '';
    let d = Math.round((now() - t) / 1000);
    const future = d < 0;
    if (future) d = -d;
    return future ? 'in ' + span(d) : span(d) + ' ago';
  }

  function duration(ms) {
    if (!ms) return '0s';
    if (ms < 1000) return ms + 'ms';
    if (ms < 10000) return (ms / 1000).toFixed(1).replace(/\.0$/, '') + 's';
    return span(Math.round(ms / 1000));
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

  // category: what the page sorts, counts and filters by — the server's
  // (summary.go's category: the status's state, with what only the
  // watchdog knows, stale, and what a running gate may be, overrun),
  // which the timeline's lanes are ordered by too. Most pressing first:
  // the order of summary.go's categories (TestCategoriesAgree).
  const CATEGORIES = ['failing', 'blocked', 'stale', 'overrun', 'skipped', 'paused', 'running', 'waiting', 'done', 'ok', 'never-run'];
  function category(g) { return g.category || g.state; }
  // badgeOf: the word on the badge.
  function badgeOf(g) {
    if (g.state === 'error') return 'error';
    return category(g);
  }

  // lockWords: who holds a lock first, then which: "pid 99 (python3
  // old.py), started 11-29 08:00 KST, holds legacy lock /tmp/x.lock".
  function lockWords(l) {
    let what = l.path;
    if (l.kind === 'legacy_lock') what = 'legacy lock ' + l.path;
    else if (l.kind === 'legacy_pidfile') what = 'pidfile ' + l.path;
    else if (l.kind === 'slot') what = 'slot ' + l.file;
    else if (l.kind === 'path') what = l.path;
    if (l.state === 'free') return what + ': free now';
    if (l.state === 'unknown') return what + ': unknown (' + (l.error || '') + ')';
    const hs = (l.holders || []).map(h => (h.pid ? 'pid ' + h.pid : 'a process not visible here') +
      (h.command ? ' (' + h.command + ')' : '') + (h.started ? ', started ' + shortTime(h.started) + ',' : ''));
    const who = hs.join('; ') || 'a process not visible here';
    return who + (l.kind === 'legacy_pidfile' ? ' is named by ' : ' holds ') + what;
  }

  // holdingWords: what holds a skipping gate back now, in words.
  function holdingWords(k) {
    const locks = k.locks || [];
    const full = {};
    for (const l of locks) if (l.kind === 'slot') full[l.path] = (full[l.path] !== false) && l.state === 'held';
    const held = locks.filter(l => l.state === 'held' && (l.kind !== 'slot' || full[l.path]));
    if (held.length) return held.slice(0, 2).map(lockWords).join('; ') + (held.length > 2 ? '; and ' + (held.length - 2) + ' more' : '');
    const unknown = locks.find(l => l.state === 'unknown');
    if (unknown) return 'not known: ' + lockWords(unknown);
    if (locks.length) return 'nothing holds it now: the next attempt should run';
    return k.note || k.detail || '';
  }

  function stateNode(g) {
    const state = badgeOf(g);
    const wrap = el('span');
    const badge = el('span', 'state state-' + state, state);
    badge.dataset.state = g.state;
    wrap.appendChild(badge);
    let sub = [];
    let why = [];
    let holder = null; // a blocked gate: who holds what, on its own line
    if (g.state === 'running' && g.running && g.running.length) {
      const r = g.running[0];
      sub = ['pid ' + (r.child_pid || r.pid) + ' for ' + ago(r.since).replace(' ago', '')];
      if (g.overrun) sub.push(' · longer than max_runtime ' + g.max_runtime);
      why = ['running since ' + r.since + ' (run ' + r.run + ')'];
    } else if (g.state === 'waiting' && g.waiting && g.waiting.length) {
      // A run waits its jitter: its command starts at until.
      const w = g.waiting[0];
      sub = ['jitter · starts ' + shortTime(w.until)];
      why = ['waiting its jitter since ' + w.since + ' (run ' + w.run + ', pid ' + w.pid + ')', 'its command starts at ' + w.until];
    } else if (g.state === 'paused' && g.pause) {
      const p = g.pause;
      sub = [iso(p.by)];
      if (p.reason) sub.push(': ', iso(p.reason));
      if (p.until) sub.push(' · until ' + shortTime(p.until));
      why = [p.who ? 'by ' + p.who : '', p.since ? 'since ' + p.since : '', p.until ? 'until ' + p.until : '', p.reason ? 'reason: ' + p.reason : ''];
    } else if (g.state === 'failing' && g.last_end) {
      sub = [iso(endWords(g.last_end))];
      if (g.consecutive_failures > 1) sub.push(' · ' + g.consecutive_failures + ' in a row');
      why = [g.last_end.detail || ''];
    } else if (g.state === 'error' && g.last_error) {
      sub = [iso(g.last_error.reason || 'error')];
      why = [g.last_error.detail || ''];
    } else if (g.state === 'done' && g.last_success) {
      // once_per: this period's run succeeded; nothing is due until it ends.
      sub = ['once per ' + g.once_per + ' · next period ' + shortTime(g.period_end)];
      why = ['this period (from ' + g.period_start + ') ran at ' + g.last_success.time, 'the next period begins ' + g.period_end];
    } else if ((g.state === 'blocked' || g.state === 'skipped') && g.skipping) {
      const k = g.skipping;
      const words = holdingWords(k);
      sub = [iso(k.reason), k.skips > 1 ? ' · ' + k.skips + ' in a row since ' + shortTime(k.since) : ' · ' + ago(k.last)];
      if (words) {
        holder = line('sub clamp holder', iso(words));
        setTitle(holder, words);
      }
      why = [k.skips + ' skip(s) in a row since ' + k.since + ' (' + k.reason + ')', words, k.detail ? 'last skip: ' + k.detail : ''];
    }
    if (state === 'stale') {
      // Stale by the watchdog: its words first, then what the status knows.
      const d = cond(g, 'stale').detail || '';
      sub = [iso(d)].concat(sub.length ? [' · '] : [], sub);
      why = [d].concat(why);
    }
    // A failing gate that is also blocked says so too.
    if (g.state !== 'blocked' && g.skipping && g.skipping.blocked && g.state !== 'skipped') {
      sub.push(sub.length ? ' · ' : '', 'blocked: ', iso(holdingWords(g.skipping)));
    }
    if (g.journal_error) sub.push(sub.length ? ' · ' : '', 'journal: ', iso(g.journal_error));
    if (sub.length) {
      const s = line('sub clamp', ...sub);
      setTitle(s, s.textContent);
      wrap.appendChild(s);
    }
    if (holder) wrap.appendChild(holder);
    setTitle(badge, ...why);
    return wrap;
  }

  function cadenceText(g) {
    const scheds = g.schedules || [];
    // Each schedule's crontab and line ("/etc/cron.d/blog:3").
    const lines = scheds.map(s => s.expr + '  (' + (s.source || 'crontab line ' + s.line) + ')' + (s.error ? '  ' + s.error : '') +
      (s.cron_tz ? '  (CRON_TZ=' + s.cron_tz + ' is not read by Debian\'s cron: next runs in cron\'s zone)' : ''));
    if (g.interval) lines.push('interval ' + g.interval);
    return lines;
  }

  function nameNode(g) {
    const wrap = el('span');
    wrap.appendChild(iso(g.name));
    if (g.cadence) {
      const unread = (g.schedules || []).some(s => !s.text);
      const c = line('sub clamp' + (unread ? ' raw' : ''), iso(g.cadence));
      c.classList.add('cadence');
      const lines = cadenceText(g);
      setTitle(c, ...(lines.length ? lines : [g.cadence]));
      wrap.appendChild(c);
    }
    if (!g.declared) wrap.appendChild(el('span', 'sub', 'not declared'));
    return wrap;
  }

  // runsNode: the last attempts, oldest first, each a bar whose height
  // says how long it ran; the full story in each bar's tooltip.
  function runsNode(g) {
    const wrap = el('span');
    const recent = g.recent || [];
    if (!recent.length) { wrap.appendChild(el('span', 'sub', 'no attempts yet')); return wrap; }
    const strip = el('span', 'runs');
    strip.setAttribute('role', 'img');
    const max = Math.max(1, ...recent.map(a => a[3] || 0));
    let counts = { ok: 0, bad: 0, skip: 0 };
    for (const a of recent) {
      const [t, outcome, exit, ms, reason] = a;
      let cls = 'run-bad';
      if (outcome === 'success') cls = 'run-ok';
      else if (outcome === 'skipped') cls = reason === 'paused' || reason === 'done' ? 'run-paused' : 'run-skip';
      else if (outcome === 'error') cls = 'run-error';
      counts[cls === 'run-ok' ? 'ok' : cls === 'run-bad' || cls === 'run-error' ? 'bad' : 'skip']++;
      const bar = el('span', 'run ' + cls);
      const ran = outcome !== 'skipped' && outcome !== 'error';
      bar.style.height = (ran ? 30 + 70 * Math.log1p(ms || 0) / Math.log1p(max) : 20) + '%';
      setTitle(bar, epochTime(t) + ' · ' + outcome + (reason ? ' (' + reason + ')' : '') +
        (exit !== null && exit !== undefined ? ', exit ' + exit : '') + (ran ? ' · ' + duration(ms) : ''));
      strip.appendChild(bar);
    }
    strip.setAttribute('aria-label', 'last ' + recent.length + ' attempts: ' + counts.ok + ' succeeded, ' + counts.bad + ' failed, ' + counts.skip + ' skipped');
    wrap.appendChild(strip);
    const last = [...recent].reverse().find(a => a[1] !== 'skipped' && a[1] !== 'error');
    if (last) wrap.appendChild(el('span', 'sub', 'last ran ' + duration(last[3])));
    return wrap;
  }

  function nextNode(g) {
    if (g.state === 'paused' && g.pause) {
      const wrap = el('span');
      wrap.appendChild(el('span', 'when', g.pause.until ? 'paused until ' + shortTime(g.pause.until) : 'paused'));
      if (g.next_run) {
        const w = el('span', 'sub', 'would run at ' + shortTime(g.next_run));
        setTitle(w, g.next_run, 'it will be skipped while paused');
        wrap.appendChild(w);
      }
      return wrap;
    }
    const n = timeNode(g.next_run, g.next_run_from === 'interval' ? 'last start + interval' : '');
    if (g.skipping && g.skipping.blocked && g.next_run) n.appendChild(el('span', 'sub', 'will skip unless that changes'));
    if (g.period_done && g.next_run && g.period_end && Date.parse(g.next_run) < Date.parse(g.period_end)) {
      n.appendChild(el('span', 'sub', 'skips (done) until ' + shortTime(g.period_end)));
    }
    return n;
  }

  // The watchdog's conditions in words an operator reads at a glance;
  // the tooltip says what the state means.
  const COND_WORDS = { stale: 'stale', failed: 'failed', unscheduled: 'not scheduled', skipping: 'blocked', overrun: 'overrun' };
  function condWords(c) {
    const name = COND_WORDS[c.condition] || c.condition;
    const n = c.count ? c.count + ' check' + (c.count > 1 ? 's' : '') + ' in a row' : '';
    switch (c.state) {
      case 'pending': return [name + ' · alert pending', 'bad at ' + n + '; an alert goes out once it has been bad for alert_after checks in a row (2 unless set)'];
      case 'alerted': return [name + ' · alert sent' + (c.known_at_install ? ' (known at install)' : ''), 'an alert was sent; a recovery message follows when it clears'];
      case 'muted': return [name + ' · known at install', 'it was already bad, since before the watchdog\'s first check, so it is taken as known and not alerted' + (c.remind_at ? '; if it is still bad at ' + c.remind_at + ' (remind_after), it alerts' : '') + '; once it clears, a new problem alerts as usual'];
      case 'recovering': return [name + ' · cleared', 'it cleared; the recovery message is still being delivered to those who had the alert'];
    }
    return [name, ''];
  }

  function watchdogNode(g) {
    const wrap = el('span');
    const conds = g.conditions || [];
    if (!conds.length) { wrap.appendChild(el('span', 'cond cond-quiet', '-')); return wrap; }
    const shown = conds.filter(c => c.bad || c.state !== 'ok');
    if (!shown.length) {
      const ok = el('span', 'cond cond-quiet', 'all clear');
      setTitle(ok, 'watched: ' + conds.map(c => COND_WORDS[c.condition] || c.condition).join(', '));
      wrap.appendChild(ok);
      return wrap;
    }
    for (const c of shown) {
      const [words, meaning] = condWords(c);
      const s = el('span', 'cond ' + (c.bad && c.state !== 'muted' ? 'cond-bad' : 'cond-quiet'), words);
      setTitle(s, meaning, c.since ? 'since ' + c.since : '', c.detail || '');
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
      setTitle(b, 'read-only: to ' + label + ', ' + (plainHTTP ? 'use HTTPS or ssh -L (see above)' : LOGIN_HINT));
    }
    return b;
  }

  function openForm(r) {
    r.form.hidden = false;
    r.form.querySelector('input[name=reason]').focus();
  }
  function closeForm(r) {
    r.form.hidden = true;
    for (const i of r.form.querySelectorAll('input')) i.value = '';
    const b = r.tr.querySelector('button.pause');
    if (b) b.focus();
  }

  function actionsNode(g, r) {
    const wrap = el('span', 'actions');
    wrap.appendChild(actionButton('pause', 'pause', 'pause this gate: its runs are skipped until it is resumed or the pause ends', () => {
      if (r.form.hidden) openForm(r); else closeForm(r);
    }));
    if (g.pause && g.pause.by === 'command' && !g.config_paused) {
      wrap.appendChild(actionButton('resume', 'resume', 'lift the pause set from the command line or this page', () => post('/api/resume', { gate: g.name })));
    }
    if (g.config_paused) {
      wrap.appendChild(actionButton('force-resume', 'force-resume danger', 'lifts the pause set in the config file (paused = false, edited in place)', () => {
        if (window.confirm('Set paused = false for ' + g.name + ' in the config file?')) post('/api/force-resume', { gate: g.name });
      }));
    }
    wrap.appendChild(actionButton('run now', 'trigger', 'run the command now through the gate: skipped while paused, done or held back as a cron tick would be; recorded as a manual run', () => {
      if (window.confirm('Run ' + g.name + ' now, through its gate?')) post('/api/trigger', { gate: g.name });
    }));
    const out = button('output', 'output', () => toggleOutput(g.name, r));
    setTitle(out, g.log_output ? 'the last run\'s output' : 'output is not kept for this gate (log_output)');
    wrap.appendChild(out);
    return wrap;
  }

  // makeForm: the pause form, a real form: labelled fields, Enter
  // submits, Escape cancels.
  function makeForm(name, r) {
    const tr = el('tr', 'form');
    tr.hidden = true;
    tr.dataset.gate = name;
    const td = el('td');
    td.colSpan = COLS;
    const form = el('form', 'pause-form');
    form.noValidate = true;
    const title = line('form-title', 'Pause ', iso(name));
    const field = (label, nm, placeholder, max) => {
      const l = el('label');
      l.appendChild(document.createTextNode(label));
      const i = el('input');
      i.name = nm; i.placeholder = placeholder; i.maxLength = max; i.autocomplete = 'off';
      l.appendChild(i);
      return [l, i];
    };
    const [rl, reason] = field('Reason', 'reason', 'why, for the others', 500);
    const [dl, dur] = field('For', 'duration', '2h, 3d; empty: until resumed', 20);
    const go = el('button', 'pause-confirm', 'pause ' + name);
    go.type = 'submit';
    const cancel = button('cancel', 'cancel', () => closeForm(r));
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      post('/api/pause', { gate: name, reason: reason.value, duration: dur.value }).then(ok => {
        if (ok) closeForm(r);
      });
    });
    form.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') { ev.preventDefault(); closeForm(r); }
    });
    for (const n of [title, rl, dl, go, cancel]) form.appendChild(n);
    td.appendChild(form);
    tr.appendChild(td);
    return tr;
  }

  function makeOutput(name) {
    const tr = el('tr', 'output');
    tr.hidden = true;
    tr.dataset.gate = name;
    const td = el('td');
    td.colSpan = COLS;
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
        // sequences removed, other controls shown, not obeyed; isolated.
        pre.replaceChildren();
        if (body.cut_bytes) pre.appendChild(document.createTextNode('[… ' + body.cut_bytes + ' earlier bytes not shown …]\n'));
        const out = el('bdi');
        out.textContent = cleanText(body.output.replace(/\r\n/g, '\n').replace(ANSI, ''));
        pre.appendChild(out);
      }
    } catch (e) {
      pre.textContent = clean('cannot load the output: ' + e);
    }
  }

  // renderSummary: one button per category with gates in it, most
  // pressing first, and "all".
  function renderSummary(counts, total) {
    const nav = document.getElementById('summary');
    nav.hidden = total === 0;
    const parts = [];
    const make = (cat, n, label) => {
      const b = el('button', 'sum-' + cat);
      b.type = 'button';
      b.dataset.category = cat;
      b.setAttribute('aria-pressed', String(filter === cat || (cat === 'all' && filter === '')));
      b.appendChild(el('span', 'n', String(n)));
      b.appendChild(document.createTextNode(label));
      b.addEventListener('click', () => {
        filter = (cat === 'all' || filter === cat) ? '' : cat;
        applyFilter();
        renderSummary(counts, total);
      });
      parts.push(b);
    };
    make('all', total, 'all');
    for (const c of CATEGORIES) if (counts[c]) make(c, counts[c], c);
    nav.replaceChildren(...parts);
  }

  function applyFilter() {
    let shown = 0;
    for (const r of rows.values()) {
      const show = !filter || r.cat === filter;
      r.tr.hidden = !show;
      if (!show) { r.form.hidden = true; r.output.hidden = true; } else shown++;
    }
    const f = document.getElementById('filtered');
    f.hidden = !filter;
    f.textContent = filter ? 'Showing the ' + shown + ' ' + filter + ' gate(s) of ' + rows.size + '; click the pressed button again to show all.' : '';
  }

  function render(s) {
    zone = s.time_zone || zone;
    offsetFmt = null;
    serverNow = Date.parse(s.generated) || Date.now();
    fetchedAt = Date.now();
    const gm = /(Z|[+-]\d{2}:\d{2})$/.exec(s.generated || '');
    genOffset = gm ? gm[1] : '';
    document.getElementById('meta').textContent = 'times in ' + (zone.name || 'UTC') +
      (s.watchdog ? ' · watchdog checked ' + shortTime(s.watchdog.last_check) : ' · no watchdog check yet');
    document.getElementById('refreshed').textContent = 'updated ' + shortTime(s.generated);
    const warn = document.getElementById('warnings');
    warn.hidden = !(s.warnings && s.warnings.length);
    warn.replaceChildren(...(s.warnings || []).map(w => el('div', null, w)));
    document.getElementById('empty').hidden = s.gates.length > 0;
    // Problems first: by category, then by name (the summary's order).
    const rank = g => CATEGORIES.indexOf(category(g));
    const gates = s.gates.map((g, i) => [g, i]).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(x => x[0]);
    const seen = new Set();
    const counts = {};
    let prev = null;
    for (const g of gates) {
      seen.add(g.name);
      let r = rows.get(g.name);
      if (!r) {
        const tr = el('tr', 'gate');
        tr.dataset.gate = g.name;
        const cells = {};
        const labels = { name: 'Gate', state: 'State', runs: 'Last runs', success: 'Last success', next: 'Next run', watchdog: 'Watchdog', actions: 'Actions' };
        for (const k of Object.keys(labels)) {
          cells[k] = el('td', 'col-' + k);
          cells[k].dataset.label = labels[k];
          tr.appendChild(cells[k]);
        }
        r = { tr, cells, output: makeOutput(g.name) };
        r.form = makeForm(g.name, r);
        rows.set(g.name, r);
      }
      // Keep the rows in this order, each followed by its form and output
      // rows (which survive refreshes).
      const anchor = prev ? prev.output.nextSibling : tbody.firstChild;
      if (r.tr !== anchor) tbody.insertBefore(r.tr, anchor);
      if (r.tr.nextSibling !== r.form) tbody.insertBefore(r.form, r.tr.nextSibling);
      if (r.form.nextSibling !== r.output) tbody.insertBefore(r.output, r.form.nextSibling);
      prev = r;
      r.cat = category(g);
      counts[r.cat] = (counts[r.cat] || 0) + 1;
      fill(g, r);
    }
    for (const [name, r] of rows) {
      if (!seen.has(name)) { r.tr.remove(); r.form.remove(); r.output.remove(); rows.delete(name); }
    }
    if (filter && !counts[filter]) filter = '';
    renderSummary(counts, gates.length);
    applyFilter();
  }

  function set(td, node) {
    td.replaceChildren(node);
  }

  function fill(g, r) {
    const c = r.cells;
    r.tr.className = 'gate state-row-' + r.cat;
    r.tr.dataset.category = r.cat;
    set(c.name, nameNode(g));
    set(c.state, stateNode(g));
    set(c.runs, runsNode(g));
    set(c.success, timeNode(g.last_success && g.last_success.time));
    set(c.next, nextNode(g));
    set(c.watchdog, watchdogNode(g));
    // The buttons are rebuilt only when what they do changes, so that a
    // refresh never takes the focus from a keyboard user.
    const key = [canAct, g.pause ? g.pause.by : '', g.config_paused, g.log_output].join('|');
    if (r.actionsKey !== key) {
      const had = c.actions.contains(document.activeElement) ? document.activeElement.className : '';
      set(c.actions, actionsNode(g, r));
      r.actionsKey = key;
      if (had) { const b = c.actions.querySelector('button.' + had.split(' ')[0]); if (b) b.focus(); }
    }
  }

  // The message banner: a success clears itself; an action's error too,
  // later; "cannot refresh" clears as soon as a refresh works again.
  let msgTimer = 0;
  let msgKind = '';
  function message(text, kind) {
    const m = document.getElementById('message');
    m.textContent = clean(text);
    m.className = kind === 'ok' ? '' : 'error';
    m.hidden = false;
    msgKind = kind;
    clearTimeout(msgTimer);
    if (kind !== 'refresh') msgTimer = setTimeout(clearMessage, kind === 'ok' ? NOTE_MS : ERROR_MS);
  }
  function clearMessage() {
    const m = document.getElementById('message');
    m.hidden = true;
    m.textContent = '';
    msgKind = '';
  }

  function readOnly() {
    canAct = false;
    forgetKey();
    document.getElementById('readonly').hidden = plainHTTP;
    document.getElementById('plainhttp').hidden = !plainHTTP;
    document.getElementById('logout').hidden = true;
    for (const r of rows.values()) { r.form.hidden = true; r.actionsKey = ''; }
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
        message('Not allowed: ' + (data.error || 'this browser lacks the token') + '.', 'error');
        readOnly();
        await refresh();
        return false;
      }
      if (!res.ok) {
        message(data.error || (res.status + ' ' + res.statusText), 'error');
        return false;
      }
      message(data.message || 'done', 'ok');
      await refresh();
      return true;
    } catch (e) {
      message('request failed: ' + e, 'error');
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
        message('cannot refresh: ' + err, 'refresh');
        return;
      }
      render(await res.json());
      if (msgKind === 'refresh') clearMessage();
      document.body.dataset.loaded = '1';
    } catch (e) {
      message('cannot refresh: ' + e, 'refresh');
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

  // The timeline (/api/timeline): one lane per gate, problems first; a
  // run is a bar from its start to its end, a skip a mark whose shape and
  // colour say its reason. A skip whose lock a cron-gate run held links
  // to that run's bar (#run-GATE-RUN); one held by another process says
  // its pid and command. Rebuilt at each refresh of its own (every
  // TIMELINE_MS, and when the window changes), the focus kept by id.
  const TIMELINE_MS = 30000;
  const MARKS = { busy: ['▲', 'why-busy'], legacy_lock: ['◆', 'why-legacy'], legacy_pidfile: ['◆', 'why-legacy'],
    paused: ['Ⅱ', 'why-paused'], done: ['Ⅱ', 'why-paused'] };
  const HOLDER_REASONS = new Set(['busy', 'legacy_lock', 'legacy_pidfile']);
  let tlDays = 1;
  let tlBusy = false;
  function runId(gate, run) { return 'run-' + gate + '-' + run; }
  function holderWords(h) {
    if (h.gate && h.run) return 'gate ' + h.gate + ' run ' + h.run;
    let s = h.pid ? 'pid ' + h.pid : 'a process not visible here';
    if (h.command) s += ' (' + h.command + ')';
    return s;
  }
  function pct(t, since, span) {
    return Math.min(100, Math.max(0, (Date.parse(t) - since) / span * 100));
  }
  function renderTimeline(tl) {
    const box = document.getElementById('tl-lanes');
    const focused = document.activeElement && box.contains(document.activeElement) ? document.activeElement.id : '';
    const since = Date.parse(tl.since);
    const span = Math.max(1, Date.parse(tl.generated) - since);
    document.getElementById('tl-window').textContent = clean(shortTime(tl.since) + ' – ' + shortTime(tl.generated));
    const lanes = [];
    const axis = el('div', 'tl-axis');
    axis.setAttribute('aria-hidden', 'true');
    for (let i = 0; i <= 4; i++) axis.appendChild(el('span', null, epochTime((since + span * i / 4) / 1000)));
    lanes.push(axis);
    for (const ln of tl.lanes) {
      const lane = el('div', 'tl-lane');
      lane.dataset.gate = ln.gate;
      const name = el('div', 'tl-name');
      name.appendChild(iso(ln.gate));
      name.appendChild(line('sub', ln.runs.length + ' runs · ' + ln.skips.length + ' skips', ln.cut ? ' · cut' : ''));
      if (ln.cut) setTitle(name, ln.gate, ln.cut);
      const track = el('div', 'tl-track');
      track.setAttribute('role', 'group');
      track.setAttribute('aria-label', clean('timeline of gate ' + ln.gate));
      for (const r of ln.runs) {
        const a = el('a', 'tl-run out-' + r.outcome);
        a.id = runId(ln.gate, r.run);
        a.href = '#' + encodeURIComponent(a.id);
        const left = pct(r.start, since, span);
        a.style.left = left + '%';
        a.style.width = Math.max(0, pct(r.end, since, span) - left) + '%';
        const words = ln.gate + ' run ' + r.run + ': ' + endWords(r) + ', ' + shortTime(r.start) + ' – ' + shortTime(r.end);
        a.setAttribute('aria-label', clean(words));
        setTitle(a, words);
        a.addEventListener('click', ev => { ev.preventDefault(); detail(words); });
        track.appendChild(a);
      }
      ln.skips.forEach((m, i) => {
        const [glyph, cls] = MARKS[m.reason] || ['✕', 'why-error'];
        const hs = m.holders || [];
        const to = hs.find(h => h.gate && h.run);
        const node = to ? el('a', 'tl-mark ' + cls, glyph) : el('button', 'tl-mark ' + cls, glyph);
        node.id = 'skip-' + ln.gate + '-' + m.run + '-' + i;
        node.style.left = pct(m.time, since, span) + '%';
        let words = ln.gate + ' ' + (m.outcome === 'error' ? 'error' : 'skipped') + ' at ' + shortTime(m.time) + ': ' + (m.reason || '');
        if (hs.length) words += ', held by ' + hs.map(holderWords).join('; ') + (m.holders_more ? ' and ' + m.holders_more + ' more' : '');
        else if (HOLDER_REASONS.has(m.reason)) words += ', holder not recorded';
        node.setAttribute('aria-label', clean(words));
        setTitle(node, words);
        if (to) {
          node.href = '#' + encodeURIComponent(runId(to.gate, to.run));
          node.addEventListener('click', ev => { ev.preventDefault(); goToRun(runId(to.gate, to.run), words); });
        } else {
          node.type = 'button';
          node.addEventListener('click', () => detail(words));
        }
        track.appendChild(node);
      });
      lane.append(name, track);
      lanes.push(lane);
    }
    box.replaceChildren(...lanes);
    const cut = [tl.cut].concat(tl.lanes.filter(l => l.cut).map(l => l.gate + ': ' + l.cut)).filter(Boolean);
    const c = document.getElementById('tl-cut');
    c.hidden = !cut.length;
    c.textContent = clean(cut.join(' · '));
    if (focused) { const f = document.getElementById(focused); if (f) f.focus(); }
    if (pendingHash) goToRun(pendingHash, '');
  }
  function detail(words) { document.getElementById('tl-detail').textContent = clean(words); }
  // goToRun scrolls to the run's bar, focuses and highlights it; a run
  // not in the window is said so.
  let pendingHash = '';
  function goToRun(id, from) {
    const bar = document.getElementById(id);
    if (!bar || !bar.classList.contains('tl-run')) {
      if (from || pendingHash) detail('run ' + id.replace(/^run-/, '') + ' is not in this window of the timeline');
      pendingHash = '';
      return;
    }
    pendingHash = '';
    for (const b of document.querySelectorAll('.tl-target')) b.classList.remove('tl-target');
    bar.classList.add('tl-target');
    bar.scrollIntoView({ block: 'center', inline: 'nearest' });
    bar.focus();
    history.replaceState(null, '', '#' + encodeURIComponent(id));
    detail((from ? from + ' → ' : '') + bar.getAttribute('aria-label'));
  }
  async function refreshTimeline() {
    if (tlBusy) return;
    tlBusy = true;
    try {
      const res = await fetch('/api/timeline?days=' + tlDays, { credentials: 'same-origin', cache: 'no-store', headers: headers() });
      if (!res.ok) return; // the summary's refresh says what is wrong
      renderTimeline(await res.json());
      document.getElementById('timeline').dataset.loaded = tlDays;
    } catch (e) { /* likewise */ } finally { tlBusy = false; }
  }
  for (const b of document.querySelectorAll('.tl-toggle button')) {
    b.addEventListener('click', () => {
      tlDays = parseInt(b.dataset.days, 10);
      for (const o of document.querySelectorAll('.tl-toggle button')) o.setAttribute('aria-pressed', String(o === b));
      refreshTimeline();
    });
  }
  // An address ending in #run-GATE-RUN (cron-gate why prints one) lands
  // on that run once the timeline is drawn.
  function fromHash() {
    let h = '';
    try { h = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    if (h.startsWith('run-')) { pendingHash = h; if (document.getElementById(h)) goToRun(h, ''); }
  }
  window.addEventListener('hashchange', fromHash);
  fromHash();
  refreshTimeline();
  setInterval(refreshTimeline, TIMELINE_MS);

  document.getElementById('readonly').hidden = canAct || plainHTTP;
  document.getElementById('plainhttp').hidden = !plainHTTP;
  const out = document.getElementById('logout');
  out.hidden = !hasSession;
  out.addEventListener('click', logout);
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
