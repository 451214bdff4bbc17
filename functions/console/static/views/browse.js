// Browse and search: the list filters of GET /memory, search (GET /memory/search: a question or
// keywords, by words and meaning; `mode` hybrid, lexical or semantic) with the matched words
// highlighted and each hit's matched terms, coverage, similarity in meaning and last update, and
// "Load more" following next_cursor.

import { api } from "../api.js";
import { append, field, h, highlighted, select } from "../dom.js";
import { loading, memoryMeta, memoryTitle, showError, tagList } from "../ui.js";
import { CATEGORIES, PRIORITIES } from "./common.js";

const any = (items) => [["", "any"], ...items.map((v) => [v, v])];
const SEARCH_HINT = 'A question ("What coffee does he drink?") or keywords. Exact: "a phrase", prefix*, AND, OR, NOT, +required. Leave empty to list with the filters alone.';

// "Matched coffee, drink: 2 of 4 terms (50%)": how much of the query a hit covers. Nothing from a
// server that does not say (no coverage in its answer).
function coverage(row, terms) {
  if (typeof row.coverage !== "number") return null;
  const matched = Array.isArray(row.matched) ? row.matched : [];
  const share = `${Math.round(row.coverage * 100)}%`;
  const of = terms.length ? `${matched.length} of ${terms.length} terms (${share})` : share;
  const meaning = typeof row.similarity === "number" ? `; similarity in meaning ${row.similarity.toFixed(2)}` : "";
  const updated = row.memory && row.memory.updated_at ? `; updated ${row.memory.updated_at.slice(0, 10)}` : "";
  return h("p", { class: "coverage", "data-coverage": String(row.coverage) },
    (matched.length ? `Matched ${matched.join(", ")}: ${of}` : `Matched no term: ${of}`) + meaning + updated);
}

export async function render(page, ctx) {
  const params = ctx.params;
  const q = h("input", { type: "search", name: "q", value: params.get("q") || "", placeholder: "a question or keywords" });
  const category = select("category", any(CATEGORIES), params.get("category") || "");
  const tag = h("input", { type: "text", name: "tag", value: params.get("tag") || "" });
  const priority = select("priority", any(PRIORITIES), params.get("priority") || "");
  const source = select("source", any(["agent", "user"]), params.get("source") || "");
  const verified = select("verified", [["", "any"], ["true", "verified"], ["false", "unverified"]], params.get("verified") || "");
  const expired = h("input", { type: "checkbox", name: "include_expired", checked: params.get("include_expired") === "true" });
  const after = h("input", { type: "date", name: "after", value: params.get("after") || "" });
  const before = h("input", { type: "date", name: "before", value: params.get("before") || "" });
  const mode = select("mode", [["", "words and meaning"], ["lexical", "words only"], ["semantic", "meaning only"]], params.get("mode") || "");
  const form = h("form", { class: "filters", role: "search", "aria-label": "Find memories" },
    field("Search", q, SEARCH_HINT),
    field("Category", category), field("Tag", tag), field("Priority", priority),
    field("Source", source), field("Verified", verified), field("Match by", mode),
    field("From", after, "On its event date (occurred_at), else the day it was stored; UTC days."),
    field("To", before),
    h("div", { class: "field check" }, expired, h("label", { for: expired.id = "include-expired" }, "Include expired")),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Show")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (value && !(name === "include_expired")) next.set(name, String(value));
    }
    if (expired.checked) next.set("include_expired", "true");
    ctx.navigate(`#/browse?${next}`);
  });

  const alerts = h("div", { class: "alerts" });
  const results = h("ol", { class: "results", "aria-label": "Memories found" });
  const summary = h("p", { class: "count", role: "status" });
  const readAs = h("p", { class: "read-as" });
  const more = h("button", { type: "button", hidden: true }, "Load more");
  const searching = Boolean(params.get("q"));
  const query = {};
  for (const name of ["category", "tag", "priority", "include_expired", "after", "before"]) if (params.get(name)) query[name] = params.get(name);
  if (!searching) for (const name of ["source", "verified"]) if (params.get(name)) query[name] = params.get(name);
  if (searching) query.q = params.get("q");
  if (searching && params.get("mode")) query.mode = params.get("mode");
  let cursor = null;
  let shown = 0;

  const loadPage = async () => {
    const slot = h("li", { class: "pending" }, loading());
    results.append(slot);
    try {
      const answer = await api.get(searching ? "/memory/search" : "/memory", { query: { ...query, limit: 20, cursor } });
      slot.remove();
      const rows = searching ? answer.results : answer.memories;
      const terms = searching && Array.isArray(answer.terms) ? answer.terms : [];
      if (searching && terms.length) readAs.textContent = `Searched for: ${terms.join(", ")}.`;
      for (const row of rows) {
        const memory = searching ? row.memory : row;
        results.append(h("li", { class: "item" },
          h("article", {},
            h("h2", {}, memoryTitle(memory)),
            searching && row.snippet ? h("p", { class: "snippet" }, h("span", { class: "visually-hidden" }, "Match: "), highlighted(row.snippet)) : null,
            !searching || !row.snippet || row.snippet.replace(/\*\*/g, "") !== memory.content ? h("p", { class: "content" }, memory.content) : null,
            searching ? coverage(row, terms) : null,
            tagList(memory.tags),
            memoryMeta(memory))));
      }
      shown += rows.length;
      cursor = answer.next_cursor;
      more.hidden = !cursor;
      summary.textContent = `${shown} ${searching ? "found" : "shown"}${cursor ? ", more to load" : ""}.`;
    } catch (error) {
      slot.remove();
      showError(alerts, error, searching ? "Search failed" : "Could not list memories");
    }
  };
  more.addEventListener("click", async () => {
    more.disabled = true;
    await loadPage();
    more.disabled = false;
  });
  await loadPage();
  if (searching) {
    for (const control of [source, verified]) control.disabled = true;
  }
  append(page, h("h1", {}, "Browse and search"), form, alerts, summary, readAs, results, more);
}
