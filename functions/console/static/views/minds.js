// Minds: create, rename, delete (the name typed to confirm), and which one the console shows, with
// the person's role on each (renaming and deleting are an owner's).

import { api, session } from "../api.js";
import { append, field, h } from "../dom.js";
import { announce, busyButton, confirmDialog } from "../ui.js";
import { may, roleOf } from "../roles.js";

export async function render(page, ctx) {
  await ctx.refreshMinds();
  const alerts = h("div", { class: "alerts" });
  const name = h("input", { type: "text", name: "name", required: true, maxlength: 100 });
  const create = h("button", { type: "submit", class: "primary" }, "Create mind");
  const createForm = h("form", { class: "inline", "aria-labelledby": "create-mind" },
    h("h2", { id: "create-mind" }, "New mind"), field("Name", name), create);
  createForm.addEventListener("submit", (event) => {
    event.preventDefault();
    busyButton(create, async () => {
      const made = await api.post("/minds", { name: name.value.trim() }, { mind: false });
      session.mindId = made.mind.id;
      announce(`Created ${made.mind.name}. Its first Mind Key is on the Access page's list; create a new one to see a key.`);
      ctx.navigate("#/minds");
    }, alerts, "Could not create the mind");
  });

  const rows = ctx.state.minds.map((mind) => {
    const rename = h("input", { type: "text", name: "name", value: mind.name, required: true, maxlength: 100, id: `rename-${mind.id}` });
    const save = h("button", { type: "submit" }, "Rename");
    const remove = h("button", { type: "button", class: "danger" }, "Delete…");
    const form = h("form", { class: "inline-row" }, h("label", { for: rename.id, class: "visually-hidden" }, `New name for ${mind.name}`), rename, save);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      busyButton(save, async () => {
        await api.patch(`/minds/${mind.id}`, { name: rename.value.trim() }, { mind: false });
        announce(`Renamed to ${rename.value.trim()}.`);
        ctx.navigate("#/minds");
      }, alerts, "Could not rename");
    });
    remove.addEventListener("click", async () => {
      const sure = await confirmDialog({
        title: `Delete ${mind.name}?`,
        text: "Its memories, keys, hooks, webhooks and search index are deleted. This cannot be undone.",
        action: "Delete mind", danger: true, typeName: mind.name,
      });
      if (!sure) return;
      await busyButton(remove, async () => {
        await api.del(`/minds/${mind.id}`, { mind: false });
        if (session.mindId === mind.id) session.mindId = null;
        announce(`Deleted ${mind.name}.`);
        ctx.navigate("#/minds");
      }, alerts, "Could not delete the mind");
    });
    const show = h("button", { type: "button", disabled: mind.id === session.mindId }, mind.id === session.mindId ? "Shown" : "Show");
    show.addEventListener("click", () => {
      session.mindId = mind.id;
      const picker = document.getElementById("mind");
      picker.value = mind.id;
      picker.dispatchEvent(new Event("change"));
    });
    const owner = may(mind, "manage");
    return h("tr", {},
      h("th", { scope: "row" }, mind.name, h("br"), h("small", { class: "muted" }, mind.id)),
      h("td", {}, roleOf(mind)),
      h("td", {}, String(mind.memory_count ?? "—")),
      h("td", {}, owner ? form : h("span", { class: "muted" }, "an owner renames it")),
      h("td", {}, h("div", { class: "actions" }, show, owner ? remove : null)));
  });
  append(page, 
    h("h1", {}, "Minds"),
    alerts,
    rows.length
      ? h("div", { class: "table-wrap" }, h("table", {},
        h("caption", {}, "Your minds"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Mind"), h("th", { scope: "col" }, "Your role"), h("th", { scope: "col" }, "Memories"), h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Actions"))),
        h("tbody", {}, rows)))
      : h("p", { class: "empty" }, "You have no mind yet."),
    createForm);
}
