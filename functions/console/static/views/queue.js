// The review queue (the landing page): unverified memories and pending proposals, newest first,
// with Verify, Edit then Verify, Accept, Reject and Delete, and keyboard shortcuts. Each button only
// for a role that may use it: an editor edits (unverified), a viewer reads.

import { api } from "../api.js";
import { append, clear, field, h, select, when } from "../dom.js";
import {
  announce, badge, busyButton, confirmDialog, diffView, memoryMeta, memoryTitle, tagList,
} from "../ui.js";
import { PRIORITIES, authors, labels, optional, splitTags, who } from "./common.js";
import { aRole, may, roleOf } from "../roles.js";
import { olderCandidates, replacesSection, similarTo } from "./replaces.js";

// Per list; each memory shown costs one history read for "who wrote it" and one look-up of what it
// may replace.
const PAGE = 25;

async function load() {
  const [unverified, proposals] = await Promise.all([
    api.get("/memory", { query: { verified: "false", limit: PAGE } }),
    optional(api.get("/proposals", { query: { status: "pending", limit: PAGE } }), { proposals: [], next_cursor: null }),
  ]);
  return { unverified, proposals };
}

export async function refreshBadge(ctx) {
  if (!ctx.state.mind) { ctx.setBadge(0); return; }
  try {
    const { unverified, proposals } = await load();
    ctx.setBadge(unverified.memories.length + proposals.proposals.length,
      Boolean(unverified.next_cursor || proposals.next_cursor));
  } catch { /* the badge is a hint; the page itself reports errors */ }
}

const SHORTCUTS = [
  ["j / ↓", "next item"], ["k / ↑", "previous item"], ["v", "verify"], ["e", "edit then verify"],
  ["a", "accept proposal"], ["r", "reject proposal"], ["Delete / x", "delete memory"],
];

export async function render(page, ctx) {
  const mind = ctx.state.mind;
  const [{ unverified, proposals }, names] = await Promise.all([load(), labels(mind)]);
  const memories = unverified.memories;
  const withBase = await Promise.all(proposals.proposals.map(async (proposal) => {
    try {
      return { proposal, memory: await api.get(`/memory/${encodeURIComponent(proposal.memory_id)}`) };
    } catch {
      return { proposal, memory: null };
    }
  }));
  const written = await authors(memories, names);
  const entries = [
    ...memories.map((memory) => ({ kind: "memory", at: memory.updated_at, memory })),
    ...withBase.map(({ proposal, memory }) => ({ kind: "proposal", at: proposal.created_at, proposal, memory })),
  ].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));

  const more = Boolean(unverified.next_cursor || proposals.next_cursor);
  ctx.setBadge(entries.length, more);
  const alerts = h("div", { class: "alerts" });
  const list = h("ol", { class: "queue", "aria-label": "Waiting for review" });
  const empty = h("p", { class: "empty", hidden: entries.length > 0 }, "Nothing waits for review. Agents' new memories and proposed changes appear here.");
  const count = h("p", { class: "count" });
  const updateCount = () => {
    const n = list.children.length;
    count.textContent = `${n}${more ? "+" : ""} waiting for review`;
    empty.hidden = n > 0;
    ctx.setBadge(n, more);
  };

  const removeItem = (item, message) => {
    const next = item.nextElementSibling || item.previousElementSibling;
    item.remove();
    updateCount();
    announce(message);
    if (next) next.focus();
    else page.querySelector("h1").focus();
  };

  // A memory marked replaced leaves the queue (replaced memories are out of the list): its card too.
  const dropCard = (memoryId) => {
    const card = [...list.children].find((one) => one.dataset.kind === "memory" && one.dataset.id === memoryId);
    if (card) { card.remove(); updateCount(); }
  };

  const offers = new Map(); // memory id → show what it may replace on its card
  for (const entry of entries) {
    if (entry.kind === "memory") {
      const { item, offer } = memoryItem(entry.memory, written.get(entry.memory.id), alerts, { removeItem, dropCard }, mind);
      offers.set(entry.memory.id, offer);
      list.append(item);
    } else {
      list.append(proposalItem(entry.proposal, entry.memory, names, alerts, removeItem, mind));
    }
  }
  updateCount();

  list.addEventListener("keydown", onKey);
  append(page, 
    h("h1", {}, "Review queue"),
    h("p", { class: "lede" }, `What agents wrote to ${mind.name} and what they propose to change, newest first.`),
    may(mind, "verify") ? null : h("p", { class: "role-note" },
      `You are ${aRole(roleOf(mind))} here: a reviewer or an owner verifies and decides${may(mind, "write") ? "; what you edit stays unverified" : ""}.`),
    count,
    h("details", { class: "shortcuts" }, h("summary", {}, "Keyboard shortcuts"),
      h("dl", {}, SHORTCUTS.map(([keys, does]) => [h("dt", {}, h("kbd", {}, keys)), h("dd", {}, does)]))),
    alerts, empty, list,
    more ? h("p", { class: "muted" }, "More are waiting: work through these, then reload.") : null,
  );
  // After the cards: each look-up embeds a memory (the model may load first), so the queue does not
  // wait for them; a card's section appears when its answer comes.
  similarTo(memories, (memoryId, answer) => offers.get(memoryId)(answer));
}

function onKey(event) {
  if (event.target.closest("input, textarea, select, form")) return;
  const item = event.target.closest("li.item");
  if (!item) return;
  const click = (action) => {
    const button = item.querySelector(`[data-action="${action}"]`);
    if (button && !button.disabled) { event.preventDefault(); button.click(); }
  };
  switch (event.key) {
    case "j": case "ArrowDown": event.preventDefault(); (item.nextElementSibling || item).focus(); break;
    case "k": case "ArrowUp": event.preventDefault(); (item.previousElementSibling || item).focus(); break;
    case "v": click("verify"); break;
    case "e": click("edit"); break;
    case "a": click("accept"); break;
    case "r": click("reject"); break;
    case "x": case "Delete": click("delete"); break;
    default: break;
  }
}

// The card, and `offer(answer)`, which shows on it what GET /memory/{id}/similar answered.
function memoryItem(memory, author, alerts, { removeItem, dropCard }, mind) {
  const headingId = `q-${memory.id}`;
  const body = h("div", { class: "body" });
  const item = h("li", { class: "item", tabindex: "0", "aria-labelledby": headingId, dataset: { id: memory.id, kind: "memory" } });
  let candidates = [];
  const offered = h("div", { class: "offered" });
  const showOffered = () => append(clear(offered), replacesSection(memory, candidates, mind, alerts, onMarked));
  // A reviewer's mark is their write: it verifies the memory, which leaves the queue. An editor's
  // stays unverified: the card stays, the marked memory out of it.
  const onMarked = (saved, older, status, candidate) => {
    const what = `${older.category} / ${older.key}`;
    if (status === "superseded") dropCard(older.id);
    if (saved.verified) {
      removeItem(item, `Marked ${what} as replaced by ${memory.key}, and verified ${memory.key}.`);
      return;
    }
    Object.assign(memory, saved);
    candidates = candidates.filter((one) => one.memory.id !== older.id);
    const said = status === "proposed"
      ? `Proposed ${what} as replaced by ${memory.key}: it is verified, so a reviewer decides.`
      : `Marked ${what} as replaced by ${memory.key}.`;
    const note = h("p", { class: "marked", tabindex: "-1" }, said);
    candidate.replaceWith(h("li", { class: "candidate" }, note));
    announce(said);
    note.focus();
  };
  const showRead = () => {
    append(clear(body),
      h("p", { class: "content" }, memory.content),
      tagList(memory.tags),
      memoryMeta(memory, author),
      h("div", { class: "actions" }, may(mind, "verify") ? verify : null, may(mind, "write") ? edit : null, may(mind, "delete") ? remove : null),
      offered,
    );
    showOffered();
  };
  const verify = h("button", { type: "button", class: "primary", "data-action": "verify" }, "Verify");
  verify.addEventListener("click", () => busyButton(verify, async () => {
    await api.post(`/memory/${encodeURIComponent(memory.id)}/verify`);
    removeItem(item, `Verified ${memory.category} / ${memory.key}.`);
  }, alerts, `Could not verify ${memory.key}`));
  const verifies = may(mind, "verify");
  const edit = h("button", { type: "button", "data-action": "edit" }, verifies ? "Edit then verify" : "Edit");
  edit.addEventListener("click", () => {
    clear(body).append(editForm(memory, alerts, async (saved, proposed) => {
      if (verifies) { removeItem(item, `Saved and verified ${saved.category} / ${saved.key}.`); return; }
      Object.assign(memory, saved); // an editor's change waits for a reviewer, here in the queue
      showRead();
      announce(`${proposed ? "Proposed a change to" : "Saved"} ${saved.category} / ${saved.key}; a reviewer verifies it.`);
      edit.focus();
    }, showRead, verifies));
    body.querySelector("textarea").focus();
  });
  const remove = h("button", { type: "button", class: "danger", "data-action": "delete" }, "Delete");
  remove.addEventListener("click", async () => {
    const sure = await confirmDialog({
      title: "Delete this memory?",
      text: `${memory.category} / ${memory.key} is deleted for the agents at once.`,
      action: "Delete", danger: true,
    });
    if (!sure) { item.focus(); return; }
    await busyButton(remove, async () => {
      await api.del(`/memory/${encodeURIComponent(memory.id)}`);
      removeItem(item, `Deleted ${memory.category} / ${memory.key}.`);
    }, alerts, `Could not delete ${memory.key}`);
  });
  item.append(h("article", {}, h("h2", { id: headingId }, memoryTitle(memory)), body));
  showRead();
  const offer = (answer) => {
    candidates = olderCandidates(memory, answer);
    showOffered();
  };
  return { item, offer };
}

// Edit a memory; a role that verifies saves and verifies at once, an editor's save stays unverified.
export function editForm(memory, alerts, onSaved, onCancel, verifies = true) {
  const content = h("textarea", { name: "content", rows: 4, required: true, maxlength: 10000 });
  content.value = memory.content;
  const tags = h("input", { type: "text", name: "tags", value: memory.tags.join(", ") });
  const priority = select("priority", PRIORITIES.map((p) => [p, p]), memory.priority);
  const save = h("button", { type: "submit", class: "primary" }, verifies ? "Save and verify" : "Save");
  const form = h("form", { class: "edit" },
    field("Content", content),
    field("Tags (comma-separated)", tags),
    field("Priority", priority),
    h("div", { class: "actions" }, save, h("button", { type: "button", onclick: onCancel }, "Cancel")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busyButton(save, async () => {
      const id = encodeURIComponent(memory.id);
      const put = await api.put(`/memory/${id}`, { content: content.value, tags: splitTags(tags.value), priority: priority.value }, { ifMatch: memory.version });
      // An editor's change to a verified memory may come back as a proposal (202 {proposal, memory}).
      const saved = verifies ? await api.post(`/memory/${id}/verify`) : (put && put.memory) || put;
      await onSaved(saved, Boolean(!verifies && put && put.proposal));
    }, alerts, `Could not save ${memory.key}`);
  });
  return form;
}

// What a proposal changes besides content and tags, and which of those changes take the memory down
// or out of recall (the API's rule, docs/history.md: a lower priority or confidence, an expiry added
// or brought forward).
const OTHER_FIELDS = [["priority", "Priority"], ["confidence", "Confidence"], ["expires_at", "Expires"]];

function shown(name, value) {
  if (name === "expires_at") return value ? when(value) : "never";
  if (name === "confidence") return Number(value).toFixed(2);
  return String(value);
}

function effect(name, before, after) {
  if (name === "priority") {
    if (PRIORITIES.indexOf(after) > PRIORITIES.indexOf(before)) return "lower priority";
    return after === "critical" ? "top of every recall" : null;
  }
  if (name === "confidence") return Number(after) < Number(before) ? "lower confidence" : null;
  if (after === null || (before !== null && after >= before)) return null;
  return new Date(after) <= new Date() ? "leaves recall at once" : "will leave recall then";
}

function otherChanges(proposed, memory) {
  if (!memory) return null;
  const changed = OTHER_FIELDS.filter(([name]) => name in proposed && (proposed[name] ?? null) !== (memory[name] ?? null));
  if (changed.length === 0) return null;
  return h("ul", { class: "changes", "aria-label": "Other proposed changes" }, changed.map(([name, label]) => {
    const before = memory[name] ?? null;
    const after = proposed[name] ?? null;
    const note = effect(name, before, after);
    return h("li", {}, `${label}: `, h("del", {}, shown(name, before)), " → ", h("ins", {}, shown(name, after)),
      note ? [" ", badge(note, "warn")] : null);
  }));
}

function proposalItem(proposal, memory, names, alerts, removeItem, mind) {
  const headingId = `q-${proposal.id}`;
  const item = h("li", { class: "item proposal", tabindex: "0", "aria-labelledby": headingId, dataset: { id: proposal.id, kind: "proposal" } });
  const deleting = proposal.action === "delete";
  // A write that named this verified memory in `supersedes` (an agent's or an editor's): Accept marks
  // it replaced by that write.
  const replacing = proposal.action === "supersede";
  const what = deleting ? "the delete of" : replacing ? "the replacement of" : "the change to";
  const before = memory ? memory.content : "";
  const proposed = proposal.proposed || {};
  const after = proposed.content ?? before;
  const title = `${proposal.category} / ${proposal.key}`;
  const decide = (verb, label) => {
    const button = h("button", { type: "button", class: verb === "accept" ? (deleting ? "danger" : "primary") : "", "data-action": verb }, label);
    button.addEventListener("click", () => busyButton(button, async () => {
      await api.post(`/proposals/${encodeURIComponent(proposal.id)}/${verb}`);
      removeItem(item, `${verb === "accept" ? "Accepted" : "Rejected"} ${what} ${title}.`);
    }, alerts, `Could not ${verb} ${what} ${proposal.key}`));
    return button;
  };
  const tagsChanged = proposed.tags && memory && proposed.tags.join(",") !== memory.tags.join(",");
  const body = deleting
    ? [
      h("p", { class: "content" }, before),
      tagList(memory ? memory.tags : []),
      h("p", { class: "diff" }, h("strong", {}, "The agent proposes to delete this memory."),
        " Accept deletes it (its history keeps it 30 days, so it can be restored); Reject keeps it."),
    ]
    : replacing ? [
      h("p", { class: "content" }, before),
      tagList(memory ? memory.tags : []),
      h("p", { class: "diff" }, h("strong", {}, "Proposed: this memory is replaced by "),
        h("a", { href: `#/memory/${encodeURIComponent(proposal.superseded_by)}` }, "a newer memory"),
        ". Accept marks it replaced (kept, out of recall and search); Reject keeps it current."),
    ]
    : [
      after === before ? h("p", { class: "content" }, before) : diffView(before, after),
      tagsChanged ? h("p", {}, "Tags: ", tagList(memory.tags), " → ", tagList(proposed.tags)) : tagList(proposed.tags || (memory ? memory.tags : [])),
      otherChanges(proposed, memory),
    ];
  item.append(h("article", {},
    // The heading holds the link alone: beside more text than its own, a link told apart by colour
    // alone fails axe's link-in-text-block (a short key beside "proposed delete").
    h("h2", { id: headingId },
      h("a", { href: `#/memory/${encodeURIComponent(proposal.memory_id)}`, class: "title" },
        h("span", { class: "category" }, proposal.category), " / ", h("span", { class: "key" }, proposal.key))),
    h("p", { class: "kind" }, badge(deleting ? "proposed delete" : replacing ? "proposed replacement" : "proposed change", "warn")),
    body,
    h("p", { class: "meta" },
      !deleting && proposed.priority ? h("span", { class: `badge priority-${proposed.priority}` }, proposed.priority) : null,
      " proposed by ", who(proposal.proposed_by, names) || "an agent", ", ", when(proposal.created_at),
      memory ? ` · the ${memory.verified ? "verified text" : "memory"} is version ${memory.version}` : null),
    may(mind, "decide")
      ? h("div", { class: "actions" }, decide("accept", deleting ? "Accept and delete" : "Accept"), decide("reject", "Reject"))
      : h("p", { class: "muted" }, "A reviewer or an owner accepts or rejects it."),
  ));
  return item;
}
