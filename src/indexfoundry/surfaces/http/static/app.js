// The search page: posts the query to the API and shows each result's source, breadcrumb and score.
// Everything coming from the index is inserted with textContent (never as HTML).
(function () {
  "use strict";
  const base = document.body.dataset.basePath || "";
  const form = document.getElementById("search-form");
  const query = document.getElementById("query");
  const mode = document.getElementById("mode");
  const topK = document.getElementById("top-k");
  const keyRow = document.getElementById("key-row");
  const keyInput = document.getElementById("api-key");
  const status = document.getElementById("status");
  const served = document.getElementById("served");
  const results = document.getElementById("results");

  keyInput.value = sessionStorage.getItem("indexfoundry-key") || "";
  keyInput.addEventListener("change", () => sessionStorage.setItem("indexfoundry-key", keyInput.value));

  function headers() {
    const h = { "Content-Type": "application/json" };
    if (keyInput.value) h["Authorization"] = "Bearer " + keyInput.value;
    return h;
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function showError(body, fallback) {
    const err = body && body.error;
    status.className = "error";
    status.textContent = err ? err.code + ": " + err.message + (err.suggestion ? " — " + err.suggestion : "") : fallback;
  }

  async function loadInfo() {
    try {
      const health = await (await fetch(base + "/health")).json();
      keyRow.hidden = !health.auth_required;
      served.textContent = health.run_id ? "Serving run " + health.run_id : "Waiting for a completed run…";
      const res = await fetch(base + "/stats", { headers: headers() });
      if (!res.ok) return;
      const stats = await res.json();
      served.textContent = "Serving run " + stats.run_id + " — " + stats.documents + " documents, " +
        stats.chunks + " chunks (" + stats.model + ")";
      const offered = new Set(stats.search_modes);
      for (const option of Array.from(mode.options)) option.disabled = !offered.has(option.value);
      if (!offered.has(mode.value) && stats.search_modes.length) mode.value = stats.search_modes[0];
    } catch (e) {
      served.textContent = "The API is not reachable.";
    }
  }

  function render(list) {
    results.replaceChildren();
    for (const r of list) {
      const item = el("li", "result");
      const head = el("div", "head");
      head.append(el("span", "score", r.score.toFixed(3)));
      head.append(el("span", "source", r.source.uri + (r.position.page ? " p." + r.position.page : "")));
      const crumb = (r.metadata && r.metadata.heading_path) || (r.position && r.position.section);
      if (crumb) head.append(el("span", "crumb", crumb));
      item.append(head);
      const text = r.text.length > 600 ? r.text.slice(0, 600) + "…" : r.text;
      item.append(el("p", "text", text));
      item.dataset.chunkId = r.chunk_id;
      results.append(item);
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.className = "muted";
    status.textContent = "Searching…";
    const started = performance.now();
    try {
      const res = await fetch(base + "/search/" + mode.value, {
        method: "POST",
        headers: headers(),
        body: JSON.stringify({ query: query.value, top_k: Number(topK.value) || 10 }),
      });
      const body = await res.json();
      if (!res.ok) {
        results.replaceChildren();
        if (res.status === 401) keyRow.hidden = false;
        showError(body, "HTTP " + res.status);
        return;
      }
      render(body.results);
      const ms = Math.round(performance.now() - started);
      status.textContent = body.results.length ? body.results.length + " results in " + ms + " ms" : "No results";
    } catch (e) {
      showError(null, "The API is not reachable.");
    }
  });

  loadInfo();
})();
