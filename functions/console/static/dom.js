// Small DOM helpers: every element is built with createElement and text nodes, never innerHTML, so
// nothing an agent stored can become markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let uid = 0;
export function id(prefix = "f") {
  uid += 1;
  return `${prefix}-${uid}`;
}

// A labelled form control: <div class="field"><label for>…</label><control id></div>.
export function field(label, control, hint) {
  control.id = control.id || id();
  const parts = [h("label", { for: control.id }, label), control];
  if (hint) {
    const hintId = id("hint");
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("small", { id: hintId, class: "hint" }, hint));
  }
  return h("div", { class: "field" }, parts);
}

export function select(name, options, value) {
  return h(
    "select",
    { name },
    options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)),
  );
}

export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

// "Michael **Schäfer**" → text with <mark> around the words search matched.
export function highlighted(snippet) {
  const parts = String(snippet || "").split("**");
  return parts.map((part, i) => (i % 2 === 1 ? h("mark", {}, part) : part));
}
