// What a write in the review queue may replace: the memories its write's `similar` named, asked
// again (GET /memory/{id}/similar: the writer saw that answer, the reviewer did not), those stored
// before the write, each with one action, Mark as replaced (PUT /memory/{id} with `supersedes`:
// the older memory stays, marked replaced by this one, out of recall and search; rules §1).

import { api } from "../api.js";
import { h, when } from "../dom.js";
import { badge, busyButton, occurred } from "../ui.js";
import { may } from "../roles.js";

const SNIPPET = 240; // characters of the older memory's content on the card

// Asks, for each memory, what it may replace, and hands each answer to `show(memoryId, answer)` as
// it comes. A hint, like "who wrote it": an older stack without the route, or a failed look-up,
// leaves the card as it was.
export function similarTo(memories, show) {
  for (const memory of memories) {
    api.get(`/memory/${encodeURIComponent(memory.id)}/similar`)
      .then((answer) => show(memory.id, answer), () => { /* no candidates shown */ });
  }
}

// The candidates stored before the memory's latest write (a newer memory is not what it replaces:
// that one's own card offers this one), most similar first, as the API orders them.
export function olderCandidates(memory, answer) {
  if (!answer || !Array.isArray(answer.similar)) return [];
  const written = Date.parse(memory.updated_at);
  return answer.similar.filter((candidate) => candidate.memory && Date.parse(candidate.memory.created_at) < written);
}

function snippet(text) {
  const value = String(text || "");
  return value.length > SNIPPET ? `${value.slice(0, SNIPPET).trimEnd()}…` : value;
}

// The card's section, or null when nothing is offered. `onMarked(saved, older, status)` gets the
// memory as the PUT left it, the older memory, and what became of the mark ("superseded", or
// "proposed" when an editor named a verified memory: a reviewer decides).
export function replacesSection(memory, candidates, mind, alerts, onMarked) {
  if (candidates.length === 0) return null;
  const headingId = `r-${memory.id}`;
  const marks = may(mind, "write");
  const hint = may(mind, "verify")
    ? "Mark as replaced keeps the older memory, marked replaced by this one: it leaves recall and search. Marking verifies this one too."
    : "Mark as replaced keeps the older memory, marked replaced by this one: it leaves recall and search (a verified one waits for a reviewer).";
  return h("section", { class: "replaces", "aria-labelledby": headingId },
    h("h3", { id: headingId }, candidates.length === 1 ? "May replace an older memory" : `May replace ${candidates.length} older memories`),
    marks ? h("p", { class: "hint" }, hint) : null,
    h("ul", { class: "candidates" }, candidates.map((candidate) => candidateItem(memory, candidate, marks, alerts, onMarked))));
}

function candidateItem(memory, candidate, marks, alerts, onMarked) {
  const older = candidate.memory;
  const titleId = `c-${memory.id}-${older.id}`;
  const item = h("li", { class: "candidate", dataset: { id: older.id } });
  const mark = marks ? h("button", { type: "button", "data-action": "replace", "aria-describedby": titleId }, "Mark as replaced") : null;
  if (mark) {
    mark.addEventListener("click", () => busyButton(mark, async () => {
      const answer = await api.put(`/memory/${encodeURIComponent(memory.id)}`, { supersedes: [older.id] }, { ifMatch: memory.version });
      const saved = (answer && answer.memory) || answer;
      const outcome = ((answer && answer.supersedes) || []).find((one) => one.id === older.id);
      onMarked(saved, older, outcome ? outcome.status : "superseded", item);
    }, alerts, `Could not mark ${older.key} as replaced`));
  }
  // The heading holds the link alone (axe's link-in-text-block, as the queue's titles).
  item.append(
    h("h4", {}, h("a", { id: titleId, href: `#/memory/${encodeURIComponent(older.id)}`, class: "title" },
      h("span", { class: "category" }, older.category), " / ", h("span", { class: "key" }, older.key))),
    h("p", { class: "snippet" }, snippet(older.content)),
    h("p", { class: "meta" },
      badge(candidate.relation === "repeat" ? "says the same" : "same subject", "warn"), " ",
      older.verified ? badge("verified", "ok") : badge("unverified", "warn"),
      " stored ", when(older.created_at),
      older.occurred_at ? [" · on ", occurred(older.occurred_at)] : null,
      ` · similarity ${Number(candidate.similarity).toFixed(2)}`),
    mark ? h("div", { class: "actions" }, mark) : null);
  return item;
}
