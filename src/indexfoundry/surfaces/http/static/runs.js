// The runs dashboard. /runs: every pipeline of the runs folder with its runs (status, start, time
// per phase, counts, errors, latest), a chart of chunks and duration over time and one of the
// retrieval quality recorded with `indexfoundry eval --record`. /runs/<id>: one run, and its diff
// against the run before it (`run diff --format markdown --include-chunks`: each document expands
// to its chunk diff), rendered by marked and sanitised by DOMPurify. All else uses textContent.
(function () {
  "use strict";
  const base = document.body.dataset.basePath || "";
  const PHASES = ["connect", "extract", "normalize", "index", "serve"];
  const MODE_COLOURS = { hybrid: "#0b57d0", semantic: "#1b7f3b", keyword: "#a05a00" };
  const status = document.getElementById("status");
  const content = document.getElementById("content");
  const keyRow = document.getElementById("key-row");
  const keyInput = document.getElementById("api-key");
  const charts = [];

  keyInput.value = sessionStorage.getItem("indexfoundry-key") || "";
  document.getElementById("key-button").addEventListener("click", () => {
    sessionStorage.setItem("indexfoundry-key", keyInput.value);
    start();
  });

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function seconds(ms) {
    return ms === null || ms === undefined ? "–" : (ms / 1000).toFixed(2) + " s";
  }

  function when(iso) {
    return iso ? new Date(iso).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "–";
  }

  async function get(path) {
    const h = {};
    if (keyInput.value) h["Authorization"] = "Bearer " + keyInput.value;
    const res = await fetch(base + path, { headers: h });
    const body = await res.json();
    if (!res.ok) {
      if (res.status === 401) keyRow.hidden = false;
      throw body;
    }
    return body;
  }

  function showError(body) {
    const err = body && body.error;
    status.className = "error";
    status.textContent = err
      ? err.code + ": " + err.message + (err.suggestion ? " — " + err.suggestion : "")
      : "The API is not reachable.";
  }

  function safeMarkdown(text) {
    const holder = el("div", "markdown");
    if (window.marked && window.DOMPurify) {
      holder.innerHTML = window.DOMPurify.sanitize(window.marked.parse(text, { gfm: true }), {
        FORBID_TAGS: ["style", "form", "input"],
      });
    } else {
      holder.append(el("pre", null, text));
    }
    return holder;
  }

  function badge(run) {
    return el("span", "badge " + run.status, run.status);
  }

  function refusal(error) {
    const box = el("div", "refused");
    box.append(el("span", "code", error.code), document.createTextNode(": " + error.message));
    if (error.suggestion) box.append(el("span", "suggestion", "Way out: " + error.suggestion));
    return box;
  }

  function runLink(id) {
    const a = el("a", "run-id", id);
    a.href = "/runs/" + id;
    return a;
  }

  function cell(row, cls, text) {
    const td = el("td", cls, text);
    row.append(td);
    return td;
  }

  function runRow(run) {
    const row = el("tr", "run");
    row.dataset.runId = run.run_id;
    row.dataset.createdAt = run.created_at;
    cell(row, "id").append(runLink(run.run_id));
    cell(row, "status").append(badge(run));
    cell(row, "created", when(run.created_at));
    cell(row, "num duration", seconds(run.duration_ms));
    for (const phase of PHASES) {
      const p = run.phases[phase];
      cell(row, "num phase " + phase, p ? seconds(p.duration_ms) : "–").title = p ? p.status : "not run";
    }
    for (const what of ["documents", "chunks", "vectors", "errors"]) cell(row, "num " + what, run[what]);
    const latest = cell(row, "latest", run.latest ? "latest" : run.became_latest ? "was latest" : "–");
    if (run.latest) latest.className = "latest latest-mark";
    return row;
  }

  function runsTable(runs) {
    const table = el("table", "runs");
    const head = el("tr");
    const titles = ["Run", "Status", "Started", "Duration", ...PHASES, "Documents", "Chunks", "Vectors", "Errors", "Latest"];
    titles.forEach((t, i) => head.append(el("th", i >= 3 && i < titles.length - 1 ? "num" : null, t)));
    table.append(el("thead"), el("tbody"));
    table.tHead.append(head);
    for (const run of runs.slice().reverse()) {
      table.tBodies[0].append(runRow(run));
      if (run.refused) {
        const row = el("tr", "refusal");
        row.dataset.runId = run.run_id;
        const td = cell(row, null);
        td.colSpan = titles.length;
        td.append(refusal(run.refused));
        table.tBodies[0].append(row);
      }
    }
    return table;
  }

  function chartBox(cls, title) {
    const box = el("div", "chart " + cls);
    box.append(el("h3", null, title));
    return box;
  }

  // Both charts of a pipeline share its time span (a lone point would otherwise span years).
  function span(runs) {
    const times = runs.map((r) => Date.parse(r.created_at) / 1000);
    const low = Math.min(...times);
    const high = Math.max(...times);
    const pad = high > low ? (high - low) * 0.08 : 3600;
    return [low - pad, high + pad];
  }

  function plot(box, series, data, range, scales) {
    box.dataset.points = String(data[0].length);
    const width = Math.max(240, box.clientWidth - 16);
    const opts = {
      width: width,
      height: 190,
      series: [{}, ...series],
      scales: { x: { time: true, range: range }, ...(scales || {}) },
    };
    opts.axes = [{}, { scale: series[0].scale }];
    if (series.some((s) => s.scale !== series[0].scale)) opts.axes.push({ scale: series[series.length - 1].scale, side: 1, grid: { show: false } });
    charts.push(new window.uPlot(opts, data, box));
  }

  function sizeChart(box, runs) {
    const xs = runs.map((r) => Date.parse(r.created_at) / 1000);
    plot(
      box,
      [
        { label: "chunks", scale: "n", stroke: "#0b57d0", width: 2, points: { show: true } },
        { label: "duration (s)", scale: "s", stroke: "#a05a00", width: 2, points: { show: true } },
      ],
      [xs, runs.map((r) => r.chunks), runs.map((r) => r.duration_ms / 1000)],
      span(runs),
    );
  }

  function qualityChart(box, runs) {
    const measured = runs.filter((r) => r.evals.length);
    if (!measured.length) {
      box.dataset.points = "0";
      box.append(el("p", "empty", "No evaluation recorded for this pipeline: indexfoundry eval --run-id RUN " +
        "--queries QUERIES --qrels QRELS --record"));
      return;
    }
    const last = measured.map((r) => r.evals[r.evals.length - 1]);
    const modes = Array.from(new Set(last.flatMap((e) => Object.keys(e.metrics)))).sort();
    plot(
      box,
      modes.map((m) => ({ label: m, scale: "q", stroke: MODE_COLOURS[m] || "#555", width: 2, points: { show: true } })),
      [measured.map((r) => Date.parse(r.created_at) / 1000), ...modes.map((m) => last.map((e) => (e.metrics[m] || {})["ndcg@10"] ?? null))],
      span(runs),
      { q: { range: [0, 1] } },
    );
  }

  async function showRuns() {
    const history = await get("/dashboard/runs");
    content.replaceChildren();
    const more = history.runs_total > history.runs_shown ? " (the newest " + history.runs_shown + " of " + history.runs_total + ")" : "";
    status.className = "muted";
    status.textContent = history.runs_shown + " runs in " + history.pipelines.length + " pipeline(s)" + more;
    for (const pipeline of history.pipelines) {
      const section = el("section", "pipeline");
      section.dataset.pipeline = pipeline.pipeline;
      section.append(el("h2", null, pipeline.pipeline));
      const row = el("div", "charts");
      const size = chartBox("size", "Chunks and duration over time");
      const quality = chartBox("quality", "Retrieval quality over time (nDCG@10)");
      row.append(size, quality);
      section.append(row, runsTable(pipeline.runs));
      content.append(section);
      sizeChart(size, pipeline.runs);
      qualityChart(quality, pipeline.runs);
    }
  }

  function facts(run) {
    const dl = el("dl", "facts");
    const rows = [
      ["Pipeline", run.pipeline], ["Status", run.status], ["Started", when(run.created_at)],
      ["Completed", when(run.completed_at)], ["Duration", seconds(run.duration_ms)],
      ...PHASES.filter((p) => run.phases[p]).map((p) => [p, seconds(run.phases[p].duration_ms) + " (" + run.phases[p].status + ")"]),
      ["Sources", run.sources], ["Documents", run.documents], ["Chunks", run.chunks], ["Vectors", run.vectors],
      ["Errors", run.errors], ["Base run", run.base_run_id || "–"],
      ["Latest", run.latest ? "latest" : run.became_latest ? "was latest" : "never became latest"],
    ];
    for (const [name, value] of rows) {
      const dd = el("dd", null, value);
      dd.dataset.fact = String(name).toLowerCase();
      dl.append(el("dt", null, name), dd);
    }
    return dl;
  }

  async function showRun(id) {
    const detail = await get("/dashboard/runs/" + id);
    const run = detail.run;
    content.replaceChildren();
    status.className = "muted";
    status.textContent = "";
    const head = el("h2");
    head.append(document.createTextNode("Run "), el("code", null, run.run_id), document.createTextNode(" "), badge(run));
    content.append(head, facts(run));
    if (run.refused) content.append(refusal(run.refused));
    if (run.first_errors.length) {
      const list = el("ul", "errors");
      for (const e of run.first_errors) {
        const item = el("li");
        item.append(el("span", "code", e.code), document.createTextNode(" " + (e.uri || "") + ": " + e.message));
        if (e.suggestion) item.append(el("span", "suggestion", e.suggestion));
        list.append(item);
      }
      content.append(el("h3", null, "Errors"), list);
    }
    const diff = el("section");
    diff.id = "diff";
    if (detail.previous_run_id) {
      const title = el("h3", null, "Changes since ");
      title.append(runLink(detail.previous_run_id));
      diff.append(title, safeMarkdown(detail.diff_markdown));
    } else {
      diff.append(el("p", "muted", "The first run of its pipeline: nothing to compare with."));
    }
    content.append(diff);
  }

  function start() {
    const match = window.location.pathname.match(/^\/runs\/([0-9a-f-]{36})$/);
    (match ? showRun(match[1]) : showRuns()).catch(showError);
  }

  start();
})();
