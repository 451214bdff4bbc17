// One memory: every field, Verify / Edit then Verify / Delete, and its history as a timeline (who,
// when, what changed, a diff of the content against the version before) with Restore per revision.
// Each action only for a role that may use it (an editor's Edit saves unverified).

import { api } from "../api.js";
import { append, h, when } from "../dom.js";
import { announce, busyButton, confirmDialog, diffView, errorBox, tagList } from "../ui.js";
import { labels, optional, who } from "./common.js";
import { editForm } from "./queue.js";
import { may } from "../roles.js";

const FIELDS = [
  "id", "category", "key", "content", "tags", "priority", "source", "verified", "confidence",
  "expires_at", "expired", "created_at", "updated_at", "version", "verified_at", "verified_by", "pending_proposal",
  "superseded_by", "superseded_at",
];
const CHAIN_MAX = 10;

// The memories that replaced this one, newest last: "replaced by A → replaced by B" (rules §1).
async function replacements(memory) {
  const chain = [];
  let next = memory.superseded_by;
  while (next && chain.length < CHAIN_MAX && !chain.some((m) => m.id === next)) {
    const found = await optional(api.get(`/memory/${encodeURIComponent(next)}`), null);
    if (!found) break;
    chain.push(found);
    next = found.superseded_by;
  }
  return chain;
}

function replacedNote(chain) {
  return h("p", { class: "replaced", "data-field": "replaced-by" }, "Replaced by ",
    chain.flatMap((m, at) => [at ? " → " : "", h("a", { href: `#/memory/${encodeURIComponent(m.id)}` }, `${m.category} / ${m.key}`), `: ${m.content}`]));
}

// A memory stored verified before writes recorded their voucher (verified_by and verified_at
// null): the person's write that vouched for it, from its history (the newest revision by a person
// among those that left it verified), or null when the history does not reach it.
function voucher(memory, history) {
  if (!memory.verified || memory.verified_by) return null;
  for (const revision of (history && history.revisions) || []) {
    if (!(revision.memory || {}).verified) break;
    const by = revision.changed_by || {};
    if (by.source === "user" && by.user_id) return { by: by.user_id, at: revision.changed_at, version: revision.version };
  }
  return null;
}

function value(name, memory, vouched) {
  const raw = memory[name];
  if (memory.verified && !memory.verified_by && name === "verified_by") {
    return vouched ? `${vouched.by} (at their write, version ${vouched.version})` : "not recorded (verified at a person's write)";
  }
  if (memory.verified && !memory.verified_at && name === "verified_at" && vouched) return when(vouched.at);
  if (name === "tags") return tagList(raw);
  if (name.endsWith("_at")) return when(raw);
  if (name === "pending_proposal" && raw) return h("a", { href: "#/queue" }, `${raw} (in the review queue)`);
  if (raw === null || raw === undefined) return "—";
  if (typeof raw === "boolean") return raw ? "yes" : "no";
  return String(raw);
}

export async function render(page, ctx) {
  const id = ctx.arg;
  const path = `/memory/${encodeURIComponent(id)}`;
  const names = await labels(ctx.state.mind);
  let memory = null;
  try {
    memory = await api.get(path);
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const alerts = h("div", { class: "alerts" });
  const history = await optional(api.get(`${path}/history`, { query: { limit: 50 } }), null);
  const reload = () => ctx.navigate(`#/memory/${encodeURIComponent(id)}`);
  const mind = ctx.state.mind;

  append(page, h("h1", {}, memory ? `${memory.category} / ${memory.key}` : "Deleted memory"));
  append(page, alerts);
  if (memory) {
    const vouched = voucher(memory, history);
    const details = h("dl", { class: "fields" }, FIELDS.filter((n) => n in memory).map((n) => [h("dt", {}, n), h("dd", { class: n === "content" ? "content" : "", "data-field": n }, value(n, memory, vouched))]));
    const actions = h("div", { class: "actions" });
    const body = h("section", { "aria-labelledby": "fields-title" }, h("h2", { id: "fields-title" }, "Fields"), details, actions);
    if (!memory.verified && may(mind, "verify")) {
      const verify = h("button", { type: "button", class: "primary" }, "Verify");
      verify.addEventListener("click", () => busyButton(verify, async () => {
        await api.post(`${path}/verify`);
        announce("Verified.");
        reload();
      }, alerts, "Could not verify"));
      actions.append(verify);
    }
    const verifies = may(mind, "verify");
    const edit = h("button", { type: "button" }, verifies ? "Edit then verify" : "Edit");
    edit.addEventListener("click", () => {
      const saved = (_, proposed) => {
        announce(verifies ? "Saved and verified." : proposed ? "Change proposed: a reviewer decides." : "Saved, unverified: a reviewer verifies it.");
        reload();
      };
      const form = editForm(memory, alerts, saved, () => { form.remove(); edit.focus(); }, verifies);
      actions.after(form);
      form.querySelector("textarea").focus();
    });
    const remove = h("button", { type: "button", class: "danger" }, "Delete");
    remove.addEventListener("click", async () => {
      if (!await confirmDialog({ title: "Delete this memory?", text: `${memory.category} / ${memory.key} is deleted for the agents at once.`, action: "Delete", danger: true })) return;
      await busyButton(remove, async () => {
        await api.del(path);
        announce("Deleted.");
        reload();
      }, alerts, "Could not delete");
    });
    if (may(mind, "write")) actions.append(edit);
    if (may(mind, "delete")) actions.append(remove);
    if (memory.superseded_by) {
      body.prepend(replacedNote(await replacements(memory)));
      if (may(mind, "restore")) {
        const revive = h("button", { type: "button" }, "Make current again");
        revive.addEventListener("click", () => busyButton(revive, async () => {
          await api.post(`${path}/restore`, { version: memory.version });
          announce("Current again.");
          reload();
        }, alerts, "Could not make it current"));
        actions.append(revive);
      }
    }
    append(page, body);
  } else if (!history) {
    append(page, errorBox(new Error("No such memory: it may have been deleted.")));
    return;
  }
  append(page, timeline(history, memory, path, names, alerts, reload, may(mind, "restore")));
}

function timeline(history, memory, path, names, alerts, reload, restores) {
  const section = h("section", { "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "History"));
  if (!history) {
    section.append(h("p", { class: "muted" }, "This deployment keeps no history yet."));
    return section;
  }
  const revisions = history.revisions || [];
  const list = h("ol", { class: "timeline", "aria-label": "Revisions, newest first" });
  revisions.forEach((revision, index) => {
    const older = revisions[index + 1];
    const snapshot = revision.memory || {};
    const current = memory && index === 0 && revision.change !== "deleted";
    const restore = h("button", { type: "button", "data-version": revision.version }, `Restore version ${revision.version}`);
    restore.addEventListener("click", async () => {
      if (!await confirmDialog({ title: `Restore version ${revision.version}?`, text: "Its content, tags, priority, confidence and expiry become a new version, verified by you.", action: "Restore" })) return;
      await busyButton(restore, async () => {
        await api.post(`${path}/restore`, { version: revision.version });
        announce(`Restored version ${revision.version}.`);
        reload();
      }, alerts, `Could not restore version ${revision.version}`);
    });
    const changes = older ? changedFields(older.memory || {}, snapshot) : [];
    list.append(h("li", { class: `revision change-${revision.change}` },
      h("h3", {}, `Version ${revision.version}: ${revision.change.replace(/_/g, " ")}`),
      h("p", { class: "meta" }, who(revision.changed_by, names), ", ", when(revision.changed_at)),
      changes.length ? h("p", {}, "Changed: ", changes.join(", ")) : null,
      older && older.memory && older.memory.content !== snapshot.content
        ? diffView(older.memory.content, snapshot.content, `Content change in version ${revision.version}`)
        : h("p", { class: "content" }, snapshot.content),
      current ? h("p", { class: "muted" }, "This is the current version.") : restores ? restore : null));
  });
  section.append(revisions.length ? list : h("p", { class: "muted" }, "No revisions recorded."));
  if (history.next_cursor) section.append(h("p", { class: "muted" }, "Older revisions exist beyond the 50 shown."));
  return section;
}

function changedFields(before, after) {
  const names = ["content", "tags", "priority", "confidence", "expires_at", "verified"];
  return names.filter((n) => JSON.stringify(before[n]) !== JSON.stringify(after[n]));
}
