// Expiring soon: GET /memory/expiring, soonest first.

import { api } from "../api.js";
import { append, field, h, select } from "../dom.js";
import { memoryMeta, memoryTitle, tagList } from "../ui.js";

export async function render(page, ctx) {
  const within = ctx.params.get("within") || "7d";
  const choice = select("within", [["24h", "the next 24 hours"], ["7d", "the next 7 days"], ["30d", "the next 30 days"], ["365d", "the next year"]], within);
  choice.addEventListener("change", () => ctx.navigate(`#/expiring?within=${choice.value}`));
  const answer = await api.get("/memory/expiring", { query: { within, limit: 100 } });
  const list = h("ol", { class: "results", "aria-label": "Expiring memories" },
    answer.memories.map((memory) => h("li", { class: "item" }, h("article", {},
      h("h2", {}, memoryTitle(memory)), h("p", { class: "content" }, memory.content),
      tagList(memory.tags), memoryMeta(memory)))));
  append(page, 
    h("h1", {}, "Expiring soon"),
    h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, field("Expiring within", choice)),
    answer.memories.length ? list : h("p", { class: "empty" }, "Nothing expires in that window."),
    answer.next_cursor ? h("p", { class: "muted" }, "Showing the first 100.") : null);
}
