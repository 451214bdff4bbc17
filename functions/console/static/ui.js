// Shared pieces of the pages: the status line, errors in words, a confirm dialog, busy buttons and
// the memory card the queue, browse and expiring pages list.

import { ApiError } from "./api.js";
import { clear, field, h, when } from "./dom.js";
import { diffWords } from "./diff.js";

export function announce(message) {
  const status = document.getElementById("status");
  status.textContent = "";
  // A fresh text node each time, so screen readers repeat an identical message.
  requestAnimationFrame(() => { status.textContent = message; });
}

export function describe(error) {
  if (error instanceof ApiError) return error.describe();
  return error && error.message ? error.message : String(error);
}

// An error in words; `error.hint` (set by a page that knows what to do next) follows the API's words.
export function errorBox(error, context) {
  const text = context ? `${context}: ${describe(error)}` : describe(error);
  return h("p", { class: "error", role: "alert" }, error && error.hint ? `${text} ${error.hint}` : text);
}

// Put an error (or nothing) into a page's alert slot.
export function showError(slot, error, context) {
  clear(slot);
  if (error) slot.append(errorBox(error, context));
}

export function loading(text = "Loading…") {
  return h("p", { class: "loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), text);
}

// Run `work` with the button disabled and marked busy; errors go to `slot` (or the status line).
export async function busyButton(button, work, slot, context) {
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    if (slot) clear(slot);
    return await work();
  } catch (error) {
    if (slot) showError(slot, error, context);
    else announce(`${context ? `${context}: ` : ""}${describe(error)}`);
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

// A modal confirm. With `typeName`, the person must type it before the button works.
export function confirmDialog({ title, text, action = "Confirm", danger = false, typeName = null }) {
  const dialog = document.getElementById("dialog");
  clear(dialog);
  return new Promise((resolve) => {
    const input = typeName ? h("input", { type: "text", name: "confirm", autocomplete: "off", required: true }) : null;
    const ok = h("button", { type: "submit", class: danger ? "danger" : "primary", disabled: Boolean(typeName) }, action);
    if (input) input.addEventListener("input", () => { ok.disabled = input.value !== typeName; });
    const form = h("form", { method: "dialog" },
      h("h2", { id: "dialog-title" }, title),
      h("p", {}, text),
      input ? field(`Type ${typeName} to confirm`, input) : null,
      h("div", { class: "actions" },
        h("button", { type: "button", value: "cancel", onclick: () => dialog.close("cancel") }, "Cancel"),
        ok));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!ok.disabled) dialog.close("ok");
    });
    dialog.setAttribute("aria-labelledby", "dialog-title");
    dialog.append(form);
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    (input || ok).focus();
  });
}

export function diffView(before, after, label = "Proposed change") {
  const parts = diffWords(before, after).map((part) => {
    if (part.op === "same") return part.text;
    return h(part.op, {}, part.text);
  });
  return h("div", { class: "diff", role: "group", "aria-label": label },
    h("p", { class: "diff-text" }, parts),
    h("details", {},
      h("summary", {}, "Before and after in full"),
      h("div", { class: "before-after" },
        h("div", {}, h("h4", {}, "Before"), h("p", { class: "content" }, before)),
        h("div", {}, h("h4", {}, "After"), h("p", { class: "content" }, after)))));
}

export function tagList(tags) {
  if (!tags || tags.length === 0) return h("span", { class: "muted" }, "no tags");
  return h("ul", { class: "tags", "aria-label": "Tags" }, tags.map((tag) => h("li", {}, tag)));
}

export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}` }, text);
}

export function memoryMeta(memory, author) {
  return h("p", { class: "meta" },
    badge(memory.priority, `priority-${memory.priority}`), " ",
    memory.verified ? badge("verified", "ok") : badge("unverified", "warn"), " ",
    memory.expired ? badge("expired", "warn") : null,
    memory.pending_proposal ? badge("change proposed", "warn") : null,
    memory.superseded_by
      ? h("a", { href: `#/memory/${encodeURIComponent(memory.superseded_by)}`, class: "badge warn" }, "replaced by …")
      : null,
    " by ", author || memory.source, ", ", when(memory.updated_at),
    memory.occurred_at ? h("span", { class: "occurred" }, " · on ", occurred(memory.occurred_at)) : null,
    memory.expires_at ? h("span", {}, " · expires ", when(memory.expires_at)) : null);
}

// An event time as stored: a date stays that day (in no zone); a timestamp is shown like the others.
export function occurred(value) {
  return /^\d{4}-\d{2}-\d{2}$/.test(value) ? h("time", { datetime: value }, value) : when(value);
}

export function memoryTitle(memory) {
  return h("a", { href: `#/memory/${encodeURIComponent(memory.id)}`, class: "title" },
    h("span", { class: "category" }, memory.category), " / ", h("span", { class: "key" }, memory.key));
}
