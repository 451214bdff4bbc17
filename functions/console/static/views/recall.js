// Recall preview: the exact text GET /memory/recall gives an agent, with its category and tag
// filters, an optional user message (q: the memories most relevant to it come right after the
// critical ones) and a max_chars slider.

import { api } from "../api.js";
import { append, field, h } from "../dom.js";
import { showError } from "../ui.js";
import { CATEGORIES } from "./common.js";

const MAX_MESSAGE = 1000; // the most GET /memory/recall takes as q
// max_chars steps (the API takes 500–400,000; 400,000 is its default), roughly doubling.
const BUDGETS = [500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 400000];
const chars = (n) => `${n.toLocaleString("en")} characters`;

export async function render(page) {
  const boxes = CATEGORIES.map((c) => h("input", { type: "checkbox", name: "category", value: c, id: `recall-${c}` }));
  const tag = h("input", { type: "text", name: "tag" });
  const message = h("textarea", { name: "q", rows: 2, maxlength: MAX_MESSAGE, placeholder: "e.g. What coffee should I order for him?" });
  const slider = h("input", { type: "range", name: "max_chars", min: 0, max: BUDGETS.length - 1, step: 1, value: BUDGETS.length - 1 });
  const shown = h("output", { for: "recall-max", id: "recall-max-value" }, chars(BUDGETS[BUDGETS.length - 1]));
  slider.id = "recall-max";
  const text = h("pre", { class: "recall", tabindex: "0", "aria-label": "Recall text", "data-testid": "recall-text" });
  const size = h("p", { class: "count", role: "status" });
  const alerts = h("div", { class: "alerts" });
  let timer = null;
  let asked = 0;

  const refresh = async () => {
    asked += 1;
    const mine = asked;
    const budget = BUDGETS[Number(slider.value)];
    slider.setAttribute("aria-valuetext", chars(budget));
    shown.textContent = chars(budget);
    const query = { category: boxes.filter((b) => b.checked).map((b) => b.value), tag: tag.value.trim(), q: message.value.trim(), max_chars: budget };
    try {
      const body = await api.get("/memory/recall", { query, text: true });
      if (mine !== asked) return;
      showError(alerts, null);
      text.textContent = body;
      text.dataset.query = new URLSearchParams(Object.entries(query).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : v ? [[k, v]] : []))).toString();
      size.textContent = `${body.length.toLocaleString()} characters of at most ${chars(budget)}.`;
    } catch (error) {
      if (mine === asked) showError(alerts, error, "Recall failed");
    }
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(refresh, 250); };
  for (const box of boxes) box.addEventListener("change", refresh);
  tag.addEventListener("input", soon);
  message.addEventListener("input", soon);
  slider.addEventListener("input", () => { shown.textContent = chars(BUDGETS[Number(slider.value)]); soon(); });

  const messageField = field("For this message (optional)", message,
    "The user's message or the task, as an agent passes it (q): the memories most relevant to it come right after the critical ones.");
  messageField.classList.add("message");
  const form = h("form", { class: "recall-form", onsubmit: (e) => { e.preventDefault(); refresh(); } },
    h("fieldset", { class: "categories" }, h("legend", {}, "Categories (none = all)"),
      boxes.map((box) => h("span", { class: "check" }, box, h("label", { for: box.id }, box.value)))),
    messageField,
    field("Tag", tag),
    h("div", { class: "field" }, h("label", { for: slider.id }, "Most characters (max_chars)"), slider, shown));
  await refresh();
  append(page, 
    h("h1", {}, "Recall preview"),
    h("p", { class: "lede" }, "Exactly what an agent receives from GET /memory/recall with these parameters."),
    form, alerts, size, text);
}
