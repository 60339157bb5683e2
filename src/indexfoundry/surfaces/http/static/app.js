// The search page: posts the query to the API and shows each result's source, breadcrumb and score.
// Result text is markdown: its fences whole (a chunk cut inside a code block still shows code),
// rendered by marked, then sanitised by DOMPurify (no scripts, no event handlers, no javascript:
// links) before it touches the page; everything else uses textContent. Whole query terms are
// highlighted, stop words never.
// The query and mode live in the URL (?q=...&mode=...), so a search can be shared and reloaded.
(function () {
  "use strict";
  const base = document.body.dataset.basePath || "";
  // A server of many libraries (serve start --library): search them all, label each result.
  const libraryMode = document.body.dataset.libraries === "1";
  const form = document.getElementById("search-form");
  const query = document.getElementById("query");
  const mode = document.getElementById("mode");
  const topK = document.getElementById("top-k");
  const keyRow = document.getElementById("key-row");
  const keyInput = document.getElementById("api-key");
  const status = document.getElementById("status");
  const served = document.getElementById("served");
  const results = document.getElementById("results");
  const scores = document.getElementById("scores");

  // A chunk may begin inside a fenced code block (chunks are cut by size: the server gives the
  // opener it lacks as `fence`) or end inside one. Reopen and close the fence so its code renders
  // as code, not as paragraphs whose closing line opens a bogus block that swallows the rest.
  // The same rules as the server's (models/fences.py).
  const FENCE = /^[ \t]*(`{3,}|~{3,})(.*)$/;

  function opens(line) {
    const m = FENCE.exec(line.replace(/\r$/, ""));
    return m && !(m[1][0] === "`" && m[2].includes("`")) ? m[1] : null;
  }

  function closes(line, marker) {
    const m = FENCE.exec(line.replace(/\r$/, ""));
    return !!m && m[1][0] === marker[0] && m[1].length >= marker.length && !m[2].trim();
  }

  // "[text][ref]" whose definition is in another chunk: show the text, not the brackets.
  function unresolvedReferences(line, defined) {
    return line.replace(/\[([^\]\n]+)\]\[([^\]\n]*)\]/g, (all, label, ref) =>
      defined.has((ref || label).toLowerCase()) ? all : label);
  }

  // At most ``limit`` characters, cut at a line end, with its fences whole (``fence``: the opener
  // of the code block the text begins inside).
  function snippet(text, limit, fence) {
    let cut = text;
    if (text.length > limit) {
      const end = text.lastIndexOf("\n", limit);
      cut = text.slice(0, end > limit / 2 ? end : limit) + "\n\n…";
    }
    const defined = new Set();
    for (const m of cut.matchAll(/^ {0,3}\[([^\]]+)\]:\s/gm)) defined.add(m[1].toLowerCase());
    let marker = null;
    const lines = (fence ? fence.trim() + "\n" + cut : cut).split("\n").map((line) => {
      if (marker) {
        if (closes(line, marker)) marker = null;
        return line;
      }
      marker = opens(line);
      return marker ? line : unresolvedReferences(line, defined);
    });
    return lines.join("\n") + (marker ? "\n" + marker : "");
  }

  function safeMarkdown(text) {
    const holder = document.createElement("div");
    holder.className = "text";
    if (window.marked && window.DOMPurify) {
      const html = window.marked.parse(text, { gfm: true, breaks: false });
      holder.innerHTML = window.DOMPurify.sanitize(html, { FORBID_TAGS: ["style", "form", "input"] });
      for (const a of holder.querySelectorAll("a")) {
        a.target = "_blank";
        a.rel = "noopener noreferrer";
      }
    } else {
      holder.textContent = text;
    }
    return holder;
  }

  // Words a query is made of that say nothing about what is searched: never highlighted.
  const STOP_WORDS = new Set(("a an and are as at be but by can do does did for from has have how i if in into is it " +
    "its me my no not of on or so such that the their then there these they this to was we what when where which " +
    "who why will with would you your").split(" "));

  function terms(q) {
    const words = q.toLowerCase().split(/[^\p{L}\p{N}_]+/u);
    return Array.from(new Set(words.filter((t) => t.length > 1 && !STOP_WORDS.has(t))));
  }

  // Wrap each whole query term in <mark> (a plural s/es allowed; never a fragment of a longer word),
  // walking text nodes only (no HTML is ever built from strings).
  function highlight(root, words) {
    if (!words.length) return;
    const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp("(?<![\\p{L}\\p{N}_])((?:" + escaped.join("|") + ")(?:e?s)?)(?![\\p{L}\\p{N}_])", "giu");
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const node of nodes) {
      if (node.parentElement && node.parentElement.closest("code, pre, mark")) continue;
      const parts = node.nodeValue.split(pattern);
      if (parts.length < 2) continue;
      const frag = document.createDocumentFragment();
      parts.forEach((part, i) => frag.append(i % 2 ? el("mark", null, part) : document.createTextNode(part)));
      node.replaceWith(frag);
    }
  }

  function sourceLink(r) {
    const label = r.source.uri + (r.position.page ? " p." + r.position.page : "");
    if (/^https?:\/\//i.test(r.source.uri)) {
      const a = el("a", "source", label);
      a.href = r.source.uri;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      return a;
    }
    return el("span", "source", label);
  }

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

  async function loadLibraries() {
    const res = await fetch(base + "/libraries", { headers: headers() });
    if (!res.ok) return;
    const listed = (await res.json()).libraries;
    served.textContent = "Serving " + listed.length + " library versions: " +
      listed.map((lib) => lib.name + " " + lib.version).join(", ");
  }

  async function loadInfo() {
    try {
      const health = await (await fetch(base + "/health")).json();
      keyRow.hidden = !health.auth_required;
      if (libraryMode) return await loadLibraries();
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

  function render(list, q) {
    results.replaceChildren();
    const words = terms(q);
    for (const r of list) {
      const item = el("li", "result");
      const head = el("div", "head");
      const crumb = r.breadcrumb || (r.metadata && r.metadata.heading_path) || (r.position && r.position.section);
      if (r.library) head.append(el("span", "library", r.library));
      head.append(el("span", "crumb", crumb || r.source.uri));
      head.append(el("span", "score", r.score.toFixed(3)));
      item.append(head);
      item.append(sourceLink(r));
      const body = safeMarkdown(snippet(r.text, 1200, r.fence));
      highlight(body, words);
      item.append(body);
      item.dataset.chunkId = r.chunk_id;
      results.append(item);
    }
  }

  async function search() {
    const url = new URL(window.location.href);
    url.searchParams.set("q", query.value);
    url.searchParams.set("mode", mode.value);
    history.replaceState(null, "", url);
    status.className = "muted";
    status.textContent = "Searching…";
    const started = performance.now();
    try {
      const wanted = { query: query.value, top_k: Number(topK.value) || 10 };
      const res = libraryMode
        ? await fetch(base + "/libraries/search", {
          method: "POST",
          headers: headers(),
          body: JSON.stringify({ ...wanted, mode: mode.value }),
        })
        : await fetch(base + "/search/" + mode.value, {
          method: "POST",
          headers: headers(),
          body: JSON.stringify(wanted),
        });
      const body = await res.json();
      if (res.ok && libraryMode) {
        body.results = body.results.map((hit) => ({ ...hit.result, library: hit.library + " " + hit.version }));
      }
      if (!res.ok) {
        results.replaceChildren();
        if (res.status === 401) keyRow.hidden = false;
        showError(body, "HTTP " + res.status);
        return;
      }
      render(body.results, query.value);
      const ms = Math.round(performance.now() - started);
      status.textContent = body.results.length ? body.results.length + " results in " + ms + " ms" : "No results";
      scores.textContent = body.score_meaning ? "Scores (" + body.mode + "): " + body.score_meaning : "";
    } catch (e) {
      showError(null, "The API is not reachable.");
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });

  const params = new URLSearchParams(window.location.search);
  if (params.get("mode")) mode.value = params.get("mode");
  loadInfo().then(() => {
    if (params.get("q")) {
      query.value = params.get("q");
      search();
    }
  });
})();
