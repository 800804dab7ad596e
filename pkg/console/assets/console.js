// The flashsale sale console. Everything it shows comes from the admin API
// with the operator's bearer token (kept in this tab's sessionStorage): the
// page itself holds no data, so the ingress serves it to anyone. Every value
// is written with textContent, never as HTML (item names are free text).
"use strict";
(() => {
  const TOKEN_KEY = "flashsale.adminToken";
  const REFRESH_MS = 1000; // one /live read a second, as flashsalectl sale watch
  const TIMEOUT_MS = 5000; // a read slower than this is abandoned, and retried
  const PAGE_SIZE = 50;
  const NONE = "\u2013"; // shown where a value is missing or unavailable
  // The waiting-room card's figures (data-k keys), read from .../queue.
  const QUEUE_FIGURES = ["queue.tickets", "queue.serving_position", "queue.waiting", "queue.admit_in", "queue.rate",
    "queue.gate_holder", "queue.waitlist.in", "queue.waitlist.held", "queue.waitlist.offers", "queue.waitlist.offered",
    "queue.waitlist.claimed", "queue.waitlist.lapsed", "queue.waitlist.returned"];

  const $ = (id) => document.getElementById(id);
  const fmtInt = (n) => (n === null || n === undefined ? NONE : Number(n).toLocaleString("en-US"));

  // parseAt splits an RFC 3339 "at" into whole seconds and its fraction,
  // keeping the microseconds: Date.parse keeps milliseconds only, and one
  // float of seconds since 1970 keeps only about 0.2 us, which skews a rate.
  function parseAt(s) {
    const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s);
    if (!m) return { whole: Date.parse(s) / 1000, frac: 0 };
    return { whole: Date.parse(m[1] + m[3]) / 1000, frac: m[2] ? parseFloat("0" + m[2]) : 0 };
  }

  // secondsBetween is b - a for two "at"s.
  function secondsBetween(a, b) {
    const x = parseAt(a), y = parseAt(b);
    return (y.whole - x.whole) + (y.frac - x.frac);
  }

  // quantile is pkg/histquantile's FromBuckets (Prometheus'
  // histogram_quantile): the bucket where rank q*total falls, linear inside
  // it; past the highest bound, that bound with above = true.
  function quantile(q, les, cum, total) {
    if (!total || les.length === 0 || cum.length < les.length) return null;
    const rank = q * total;
    let lower = 0, below = 0;
    for (let i = 0; i < les.length; i++) {
      if (cum[i] >= rank) {
        const inBucket = cum[i] - below;
        if (inBucket === 0) return { seconds: les[i], above: false };
        return { seconds: lower + (les[i] - lower) * (rank - below) / inBucket, above: false };
      }
      lower = les[i];
      below = cum[i];
    }
    return { seconds: les[les.length - 1], above: true };
  }

  // compute is pkg/ctl/watch.go's Compute: answers/s and the 202 latency
  // quantiles of the interval between two reads of /live (cumulative counts
  // and histogram buckets, differenced; a count that went down was reset
  // and counts from zero). A part missing from either read has no figure.
  function compute(prev, cur) {
    const v = { interval: null, rates: null, p50: null, p99: null };
    if (!prev) return v;
    const dt = secondsBetween(prev.at, cur.at);
    if (!(dt > 0)) return v;
    v.interval = dt;
    if (prev.answers && cur.answers) {
      v.rates = {};
      for (const [k, n] of Object.entries(cur.answers)) {
        let d = n - (prev.answers[k] || 0);
        if (d < 0) d = n;
        v.rates[k] = d / dt;
      }
    }
    const ph = prev.accepted_latency, ch = cur.accepted_latency;
    if (ph && ch) {
      const prevAt = new Map((ph.buckets || []).map((b) => [b.le, b.count]));
      const reset = ch.count < ph.count;
      const les = [], cum = [];
      for (const b of ch.buckets || []) {
        les.push(b.le);
        cum.push(reset ? b.count : b.count - (prevAt.get(b.le) || 0));
      }
      const total = reset ? ch.count : ch.count - ph.count;
      v.p50 = quantile(0.5, les, cum, total);
      v.p99 = quantile(0.99, les, cum, total);
    }
    return v;
  }

  function fmtLatency(p) {
    if (!p) return NONE;
    if (p.above) return "> " + p.seconds.toFixed(2) + " s";
    if (p.seconds < 1) return (p.seconds * 1000).toFixed(1) + " ms";
    return p.seconds.toFixed(2) + " s";
  }

  // APIError is a non-2xx answer: its status and the API's error code.
  class APIError extends Error {
    constructor(status, body) {
      const code = (body && body.error) || "http_" + status;
      super(status + " " + code + (body && body.message ? ": " + body.message : ""));
      this.status = status;
      this.code = code;
    }
  }

  // gen counts token changes and refusals: an answer to a request sent
  // under an older generation is dropped, so nothing fetched with a refused
  // or forgotten token is drawn after the page was wiped.
  let gen = 0;
  let after = 0;     // the sales page shown: items after this id
  let chosen = null; // the sale being watched
  let prev = null;   // its previous /live read
  let timer = null;
  let chain = 0;     // the refresh loop running; a restart ends the older one
  let notOK = 0;     // consecutive reads whose audit was not ok
  let queued = null; // whether the watched sale has a waiting room: item.queue of its last /live read that had the item; null until one did
  let queueFlight = 0;    // the refresh loop whose read of the waiting room is under way (0: none)
  let queueReadAt = null; // when the card's figures were read (ms, this clock); null: not yet for this sale

  async function api(method, path) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) throw new APIError(401, { error: "no_token", message: "paste an admin token" });
    const abort = new AbortController();
    const t = setTimeout(() => abort.abort(), TIMEOUT_MS);
    let r;
    try {
      r = await fetch(path, {
        method, cache: "no-store", credentials: "omit", signal: abort.signal,
        headers: { Authorization: "Bearer " + token, Accept: "application/json" },
      });
    } finally {
      clearTimeout(t);
    }
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok) throw new APIError(r.status, body);
    return body;
  }

  function showError(msg) {
    $("error").textContent = msg;
    $("error").hidden = !msg;
  }

  // wipe removes every figure from the page: after a refusal the DOM must
  // hold nothing an earlier, accepted token fetched.
  function wipe() {
    clearTimeout(timer);
    timer = null;
    chain++;
    chosen = null;
    prev = null;
    notOK = 0;
    resetQueue();
    $("sales-rows").replaceChildren();
    $("bucket-rows").replaceChildren();
    $("answer-rows").replaceChildren();
    $("violations").replaceChildren();
    for (const el of document.querySelectorAll("[data-k]")) el.textContent = "";
    $("live-at").removeAttribute("datetime");
    $("page-state").textContent = "";
    $("end-result").textContent = "";
    $("live").hidden = true;
    $("data").hidden = true;
  }

  // refused handles a 401/403: nothing is shown, the token is forgotten.
  function refused(err) {
    gen++;
    wipe();
    sessionStorage.removeItem(TOKEN_KEY);
    tokenState();
    const what = err.status === 403 ? "this token is not an admin's" : "the token was not accepted (missing, expired or wrongly signed)";
    showError("Refused: " + what + " \u2014 " + err.message + ". Paste an admin token (flashsalectl token --admin).");
  }

  function tokenState() {
    $("token-state").textContent = sessionStorage.getItem(TOKEN_KEY)
      ? "A token is set for this tab (sessionStorage); Forget token removes it."
      : "No token: the console shows nothing until you paste an admin token. It is kept in this tab only (sessionStorage).";
  }

  function cell(tr, text, key) {
    const td = document.createElement("td");
    td.textContent = text;
    if (key) td.dataset.k = key;
    tr.append(td);
    return td;
  }

  function set(key, text) {
    for (const el of document.querySelectorAll('[data-k="' + key + '"]')) el.textContent = text;
  }

  async function loadSales() {
    const g = gen;
    let page;
    try {
      page = await api("GET", "/api/v1/admin/items?limit=" + PAGE_SIZE + (after ? "&after=" + after : ""));
    } catch (err) {
      if (g !== gen) return;
      if (err.status === 401 || err.status === 403) return refused(err);
      return showError("Could not list the sales: " + err.message);
    }
    if (g !== gen) return;
    showError("");
    $("data").hidden = false;
    const rows = page.items.map((it) => {
      const tr = document.createElement("tr");
      tr.dataset.id = it.id;
      if (it.id === chosen) tr.classList.add("chosen");
      cell(tr, it.id);
      cell(tr, it.name);
      cell(tr, it.state).className = "state " + it.state;
      cell(tr, fmtInt(it.stock));
      cell(tr, fmtInt(it.total_stock));
      cell(tr, it.buckets);
      cell(tr, it.starts_at);
      cell(tr, it.ends_at);
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "Watch";
      b.className = "watch";
      b.addEventListener("click", () => watch(it.id));
      cell(tr, "").append(b);
      return tr;
    });
    $("sales-rows").replaceChildren(...rows);
    $("page-next").hidden = page.next_after === undefined || page.next_after === null;
    $("page-next").dataset.after = page.next_after ?? "";
    $("page-state").textContent = rows.length
      ? "items " + page.items[0].id + " to " + page.items[page.items.length - 1].id
      : "no sales" + (after ? " after item " + after : "");
  }

  // refresh reads the watched sale now and then every REFRESH_MS, ending
  // any loop already running (one could be waiting on its read), so a
  // second Watch click or an end never leaves two loops reading at once.
  function refresh() {
    clearTimeout(timer);
    chain++;
    tick(chain);
  }

  function watch(id) {
    chosen = id;
    prev = null;
    notOK = 0;
    resetQueue();
    for (const k of QUEUE_FIGURES) set(k, NONE);
    for (const tr of $("sales-rows").children) tr.classList.toggle("chosen", Number(tr.dataset.id) === id);
    $("end-confirm").hidden = true;
    $("end-result").textContent = "";
    $("end").disabled = false;
    set("end.id", id);
    refresh();
  }

  async function tick(c) {
    const g = gen, id = chosen;
    if (id === null || c !== chain) return;
    // The waiting room is read alongside, once /live has said the sale has one.
    if (queued) readQueue(g, c, id);
    let cur;
    try {
      cur = await api("GET", "/api/v1/admin/items/" + id + "/live");
    } catch (err) {
      if (g !== gen || c !== chain) return;
      if (err.status === 401 || err.status === 403) return refused(err);
      if (err.status === 404) {
        $("live").hidden = true;
        return showError("Sale " + id + " does not exist (404).");
      }
      // An outage of the ingress itself: keep the last figures, say how old.
      const stale = $("live-stale");
      stale.textContent = "The last read failed (" + (err.message || err) + "); the figures are from the read above.";
      stale.hidden = false;
      timer = setTimeout(tick, REFRESH_MS, c);
      return;
    }
    if (g !== gen || c !== chain) return;
    $("live-stale").hidden = true;
    render(compute(prev, cur), cur);
    prev = cur;
    // Without the item (MySQL unavailable) what was known of its queue holds.
    if (cur.item) {
      const was = queued;
      queued = cur.item.queue === true;
      if (queued && !was) readQueue(g, c, id); // the first read of this sale's, or its queue just turned on
    }
    $("waiting-room").hidden = !queued;
    timer = setTimeout(tick, REFRESH_MS, c);
  }

  // resetQueue forgets the waiting room of the sale watched until now.
  function resetQueue() {
    queued = null;
    queueReadAt = null;
    $("waiting-room").hidden = true;
    $("queue-stale").hidden = true;
    $("queue-stale").textContent = "";
    set("queue.gate_warning", "");
  }

  // readQueue reads the watched sale's waiting room (GET .../queue) and
  // draws it in its card. The refresh does not wait for it, so a slow or
  // failing read never holds up the live view; while one is under way for
  // this loop no other starts, so reads of a hung endpoint do not pile up.
  async function readQueue(g, c, id) {
    if (queueFlight === c) return;
    queueFlight = c;
    let q = null, failed = null;
    try {
      q = await api("GET", "/api/v1/admin/items/" + id + "/queue");
    } catch (err) {
      failed = err;
    } finally {
      if (queueFlight === c) queueFlight = 0;
    }
    if (g !== gen || c !== chain || !queued) return;
    if (failed && (failed.status === 401 || failed.status === 403)) return refused(failed);
    if (failed) return queueStale(failed);
    drawQueue(q);
  }

  // queueStale says the card's figures are not the waiting room's now: as
  // the live view in an outage, the last ones stay, with their age.
  function queueStale(err) {
    const s = $("queue-stale");
    const why = err.message || String(err);
    if (queueReadAt === null) {
      for (const k of QUEUE_FIGURES) set(k, NONE);
      set("queue.gate_warning", "");
      s.textContent = "The waiting room could not be read (" + why + ").";
    } else {
      s.textContent = "The last read of the waiting room failed (" + why + "); the figures are from a read " +
        ((Date.now() - queueReadAt) / 1000).toFixed(1) + " s ago.";
    }
    s.hidden = false;
  }

  // fmtWait is a wait in whole seconds: 45 s, 4 min 10 s, 2 h 5 min.
  function fmtWait(s) {
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  }

  function drawQueue(q) {
    queueReadAt = Date.now();
    $("queue-stale").hidden = true;
    set("queue.tickets", fmtInt(q.tickets));
    set("queue.serving_position", fmtInt(q.serving_position));
    set("queue.waiting", fmtInt(q.waiting));
    set("queue.rate", fmtInt(q.rate));
    // The ingress' clock, as of its last /live read, says whether the sale
    // has started: the gate admits nobody before starts_at, and the time
    // to admit those waiting counts from then (as flashsalectl queue show).
    const seconds = (at) => { const p = parseAt(at); return p.whole + p.frac; };
    const started = !(seconds(q.starts_at) > (prev ? seconds(prev.at) : Date.now() / 1000));
    set("queue.admit_in", q.rate > 0 ? fmtWait(Math.ceil(q.waiting / q.rate)) + (started ? "" : " from the start") : NONE);
    set("queue.gate_holder", q.gate_holder === null || q.gate_holder === undefined ? "none" : q.gate_holder);
    // No holder: no reaper runs the gate, and nobody is admitted (runbook
    // FlashsaleQueueNoGateHolder). Before the start it is the warning that
    // the sale would open so; once it has ended nobody needs admitting.
    const ended = prev && prev.item && prev.item.state === "ended";
    let warn = "", cls = "";
    if (q.gate_holder === null && started && !ended && q.waiting > 0) {
      warn = "No reaper holds the gate while " + fmtInt(q.waiting) + " tickets wait: nobody is being admitted (runbook FlashsaleQueueNoGateHolder).";
      cls = "error";
    } else if (q.gate_holder === null && !started) {
      warn = "No reaper holds the gate: at the start nobody would be admitted (runbook FlashsaleQueueNoGateHolder).";
      cls = "warn";
    }
    set("queue.gate_warning", warn);
    document.querySelector('[data-k="queue.gate_warning"]').className = cls;
    // Released units after the sell-out: in = pool + offers + claimed +
    // returned; held = pool + offers (the audit's I9).
    const w = q.waitlist;
    set("queue.waitlist.in", w ? fmtInt(w.in) : NONE);
    set("queue.waitlist.held", w ? fmtInt(w.pool + w.offers) : NONE);
    for (const k of ["offers", "offered", "claimed", "lapsed", "returned"]) set("queue.waitlist." + k, w ? fmtInt(w[k]) : NONE);
  }

  function render(v, cur) {
    $("live").hidden = false;
    const at = $("live-at");
    at.dateTime = cur.at;
    at.textContent = cur.at.replace("T", " ").replace(/(\.\d{3})\d*/, "$1");
    const age = Math.max(0, secondsBetween(cur.at, new Date().toISOString()));
    $("live-age").textContent = "read by the ingress " + age.toFixed(1) + " s before it was drawn";
    set("interval", v.interval === null ? NONE : v.interval.toFixed(2) + " s");
    const down = cur.unavailable || [];
    $("live-unavailable").hidden = down.length === 0;
    set("unavailable", down.join(", "));

    const it = cur.item;
    set("item.id", it ? it.id : chosen);
    set("item.name", it ? it.name : "(item unavailable: MySQL could not be read)");
    set("item.state", it ? it.state : "");
    const st = document.querySelector('[data-k="item.state"]');
    st.className = "state " + (it ? it.state : "");
    set("item.redis_stock", it && it.redis_warmed ? fmtInt(it.redis_stock) : (it && it.redis_warmed === false ? "not warmed" : NONE));
    set("item.stock", it ? fmtInt(it.stock) : NONE);
    set("item.total_stock", it ? fmtInt(it.total_stock) : NONE);

    const a = cur.audit;
    for (const k of ["redis_stock", "db_stock", "pending", "pending_qty", "unpaid", "paid", "cancelled", "rejected"]) {
      set("audit." + k, a ? fmtInt(a[k]) : NONE);
    }
    const verdict = document.querySelector('[data-k="audit.verdict"]');
    verdict.textContent = a ? (a.ok ? "ok" : "NOT OK") : "unavailable";
    verdict.className = "verdict " + (a ? (a.ok ? "ok" : "bad") : "");
    // The audit reads Redis and MySQL one statement after another, not in
    // one snapshot, so while orders flow it can catch units between two
    // reads (pkg/audit says so): the operator is told how long it lasts,
    // and that the check to trust is the one at rest.
    notOK = a && !a.ok ? notOK + 1 : 0;
    set("audit.streak", notOK ? "for " + notOK + (notOK === 1 ? " read" : " consecutive reads") +
      ". While orders flow its reads, a moment apart, can disagree by a few units; a violation that stays once orders stop is real." : "");
    $("violations").replaceChildren(...((a && a.violations) || []).map((s) => {
      const li = document.createElement("li");
      li.textContent = s;
      return li;
    }));
    // An unbucketed item is its own one bucket: the audit's item figures.
    const buckets = a ? (a.per_bucket && a.per_bucket.length ? a.per_bucket : [{ bucket: "all", ...a }]) : [];
    $("bucket-rows").replaceChildren(...buckets.map((b) => {
      const tr = document.createElement("tr");
      cell(tr, b.bucket);
      cell(tr, fmtInt(b.redis_stock), "bucket." + b.bucket + ".redis_stock");
      cell(tr, fmtInt(b.db_stock), "bucket." + b.bucket + ".db_stock");
      cell(tr, fmtInt(b.pending), "bucket." + b.bucket + ".pending");
      cell(tr, fmtInt(b.pending_qty), "bucket." + b.bucket + ".pending_qty");
      return tr;
    }));

    const keys = Object.keys(cur.answers || {}).sort((x, y) => (x === "accepted" ? -1 : y === "accepted" ? 1 : x < y ? -1 : 1));
    const rows = keys.map((k) => {
      const tr = document.createElement("tr");
      cell(tr, k === "accepted" ? "accepted (202)" : k);
      cell(tr, fmtInt(cur.answers[k]), "answers." + k + ".total");
      cell(tr, v.rates ? v.rates[k].toFixed(1) : NONE, "answers." + k + ".rate");
      return tr;
    });
    if (!cur.answers) {
      const tr = document.createElement("tr");
      cell(tr, "unavailable (Redis)");
      rows.push(tr);
    }
    $("answer-rows").replaceChildren(...rows);
    set("p50", fmtLatency(v.p50));
    set("p99", fmtLatency(v.p99));
    set("consumer_lag", cur.consumer_lag === null ? "unavailable" : fmtInt(cur.consumer_lag));
    set("dlq_messages", cur.dlq_messages === null ? "unavailable" : fmtInt(cur.dlq_messages));
  }

  async function endSale() {
    const g = gen, id = chosen;
    $("end-confirm").hidden = true;
    $("end").disabled = true;
    const res = $("end-result");
    res.textContent = "ending sale " + id + "\u2026";
    delete res.dataset.status;
    try {
      const it = await api("POST", "/api/v1/admin/items/" + id + "/end");
      if (g !== gen) return;
      res.textContent = "Sale " + id + " ended at " + it.ends_at + ": buyers are now answered 409 sale_ended.";
      res.dataset.status = "200";
    } catch (err) {
      if (g !== gen) return;
      if (err.status === 401 || err.status === 403) return refused(err);
      res.textContent = "The end failed: " + err.message + (err.code === "not_warmed" ? " (press End sale again)" : "");
      res.dataset.status = String(err.status || 0);
    }
    $("end").disabled = false;
    loadSales();
    if (id === chosen) refresh();
  }

  function start() {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const t = $("token").value.trim();
      $("token").value = "";
      if (!t) return;
      gen++;
      wipe();
      sessionStorage.setItem(TOKEN_KEY, t);
      tokenState();
      showError("");
      after = 0;
      loadSales();
    });
    $("token-forget").addEventListener("click", () => {
      gen++;
      wipe();
      sessionStorage.removeItem(TOKEN_KEY);
      tokenState();
      showError("");
    });
    $("page-first").addEventListener("click", () => { after = 0; loadSales(); });
    $("page-next").addEventListener("click", () => { after = Number($("page-next").dataset.after) || 0; loadSales(); });
    $("end").addEventListener("click", () => { $("end-confirm").hidden = false; });
    $("end-no").addEventListener("click", () => { $("end-confirm").hidden = true; });
    $("end-yes").addEventListener("click", endSale);
    tokenState();
    if (sessionStorage.getItem(TOKEN_KEY)) loadSales();
  }

  // For the browser test: the page's own arithmetic, checked against
  // pkg/ctl's Compute on the same reads.
  window.flashsaleConsole = { compute, quantile };
  start();
})();
