// The live operations view and the model's facts, from GET /status/stream (a snapshot every
// second; the first one carries the last minutes' points): counters, plots drawn on canvas, the
// requests in flight. The stream reconnects when it drops.
"use strict";

const Ops = (() => {
  const $ = (id) => document.getElementById(id);
  const POINTS = 300;  // the plots' width in points (seconds)
  const series = [];   // plot points, oldest first
  let facts = null;
  let lastSnapshot = null;

  const fmt = (x, digits = 1) => (x === null || x === undefined || !Number.isFinite(x) ? "–" : x.toFixed(digits));
  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  function secs(x) {
    if (x === null || x === undefined) return "–";
    if (x < 0.001) return (x * 1e6).toFixed(0) + "µs";
    if (x < 1) return (x * 1e3).toFixed(1) + "ms";
    return x.toFixed(2) + "s";
  }
  function big(n) {
    if (n === null || n === undefined) return "–";
    if (n >= 1e12) return (n / 1e12).toFixed(2) + " T";
    if (n >= 1e9) return (n / 1e9).toFixed(2) + " B";
    if (n >= 1e6) return (n / 1e6).toFixed(2) + " M";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + " K";
    return String(n);
  }
  const set = (id, v) => {
    const e = $(id);
    if (e.textContent !== v) e.textContent = v;
  };

  // Lines of [value getter, color] over the series, on one canvas; the y axis from 0 to the max.
  function plot(id, lines, unit) {
    const c = $(id);
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (!w || !h) return;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
    }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const style = getComputedStyle(document.body);
    let max = 0;
    for (const [get] of lines) for (const p of series) max = Math.max(max, get(p) || 0);
    if (unit === "fraction") max = 1;
    max = max > 0 ? max * 1.1 : 1;
    g.strokeStyle = style.getPropertyValue("--line");
    g.lineWidth = 1;
    g.beginPath();
    g.moveTo(0, h - 0.5);
    g.lineTo(w, h - 0.5);
    g.stroke();
    g.fillStyle = style.getPropertyValue("--muted");
    g.font = "11px sans-serif";
    const label = unit === "fraction" ? "100%" : unit === "s" ? secs(max) : fmt(max, max < 10 ? 2 : 0);
    g.fillText(label, 4, 12);
    const n = series.length;
    const span = Math.min(POINTS, Math.max(60, n));  // the x axis: 60 s at least, 300 at most
    for (const [get, color] of lines) {
      g.strokeStyle = style.getPropertyValue(color);
      g.lineWidth = 1.5;
      g.beginPath();
      let started = false;
      series.forEach((p, i) => {
        const v = get(p);
        if (v === null || v === undefined) {
          started = false;
          return;
        }
        const x = w - (n - 1 - i) * (w / (span - 1));
        const y = h - 1 - (v / max) * (h - 16);
        if (started) g.lineTo(x, y);
        else g.moveTo(x, y);
        started = true;
      });
      g.stroke();
    }
  }

  function drawPlots() {
    if (!$("view-ops").classList.contains("active")) return;
    plot("plot-tps", [[(p) => p.output_tokens_per_second, "--accent"], [(p) => p.prompt_tokens_per_second, "--accent2"]]);
    plot("plot-busy", [[(p) => p.device_busy_ratio, "--accent"], [(p) => p.kv_blocks && p.kv_blocks.usage_ratio, "--accent2"]], "fraction");
    plot("plot-ttft", [[(p) => p.ttft_seconds && p.ttft_seconds.p50, "--accent"], [(p) => p.ttft_seconds && p.ttft_seconds.p99, "--accent2"]], "s");
    plot("plot-itl", [[(p) => p.itl_seconds && p.itl_seconds.p50, "--accent"], [(p) => p.itl_seconds && p.itl_seconds.p99, "--accent2"]], "s");
  }

  function table(rows, total) {
    const body = $("ops-table").tBodies[0];
    body.textContent = "";
    for (const r of rows) {
      const tr = document.createElement("tr");
      const cells = [r.id, r.state, r.prompt_tokens, r.generated_tokens, r.age_seconds.toFixed(1), r.preemptions];
      cells.forEach((v, i) => {
        const td = document.createElement("td");
        td.textContent = String(v);
        if (i !== 1) td.className = "num";
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    set("ops-inflight-count", total > rows.length ? `(${rows.length} of ${total})` : `(${total})`);
  }

  function showFacts(m) {
    facts = m;
    set("model-name", m.name ? `${m.name} · ${m.architecture}` : m.architecture);
    const f = m.floors || {};
    const rows = [
      ["name", m.name], ["architecture", m.architecture], ["file", m.file], ["format", m.format],
      ["parameters", big(m.parameters)], ["context (served)", m.context],
      ["context (trained)", m.training_context], ["layers", m.layers], ["embedding", m.embedding],
      ["heads / KV heads", `${m.heads} / ${m.kv_heads}`], ["vocabulary", m.vocabulary],
      ["device", m.device], ["activations", m.activations],
      ["weight bytes per decode step", big(m.weight_bytes_per_step) + "B"],
      ["floors", f.state],
    ];
    if (f.state === "measured") {
      rows.push(["copy bandwidth", fmt(f.copy_bytes_per_second / 1e9) + " GB/s"]);
      rows.push(["matmul rate", fmt(f.flops_per_second / 1e9) + " GFLOP/s"]);
      rows.push(["decode floor (1 sequence)", fmt(f.decode_tokens_per_second) + " tokens/s"]);
      rows.push(["prefill floor", fmt(f.prefill_tokens_per_second, 0) + " tokens/s"]);
    }
    if (f.error) rows.push(["floor error", f.error]);
    const body = $("model-facts").tBodies[0];
    body.textContent = "";
    for (const [k, v] of rows) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.textContent = k;
      const td = document.createElement("td");
      td.textContent = v === undefined || v === null ? "–" : String(v);
      tr.appendChild(th);
      tr.appendChild(td);
      body.appendChild(tr);
    }
  }

  function update(s) {
    lastSnapshot = s;
    if (s.history) {
      series.length = 0;
      for (const p of s.history) series.push(p);
    }
    const p = s.now;
    series.push(p);
    while (series.length > POINTS) series.shift();
    const c = s.counters;
    set("ops-output-tps", fmt(p.output_tokens_per_second));
    set("ops-prompt-tps", fmt(p.prompt_tokens_per_second));
    set("ops-busy", pct(p.device_busy_ratio));
    set("ops-queues", `${p.running} / ${p.waiting} / ${p.preempted}`);
    set("ops-kv", `${p.kv_blocks.used} / ${p.kv_blocks.cached} / ${p.kv_blocks.free}`);
    set("ops-hit", pct(p.prefix_cache_hit_rate));
    const t = p.ttft_seconds, l = p.itl_seconds;
    set("ops-ttft", `${secs(t.p50)} / ${secs(t.p90)} / ${secs(t.p99)}`);
    set("ops-itl", `${secs(l.p50)} / ${secs(l.p90)} / ${secs(l.p99)}`);
    const done = Object.values(c.forge_requests_total).reduce((a, b) => a + b, 0);
    set("ops-total", `${done} / ${big(c.forge_engine_generation_tokens_total)}`);
    set("live", `${fmt(p.output_tokens_per_second)} tok/s`);
    table(s.in_flight, s.in_flight_total);
    if (!facts || JSON.stringify(facts) !== JSON.stringify(s.model)) showFacts(s.model);
    drawPlots();
  }

  async function connect() {
    for (;;) {
      try {
        const r = await Api.call("/status/stream");
        if (!r.ok) throw new Error(await Api.errorText(r));
        await Api.readEvents(r, (data) => update(JSON.parse(data)));
      } catch (e) {
        set("live", "offline");
      }
      await new Promise((res) => setTimeout(res, 2000));
    }
  }

  function init() {
    connect();
    window.addEventListener("resize", drawPlots);
  }

  return { init, drawPlots, snapshot: () => lastSnapshot };
})();
