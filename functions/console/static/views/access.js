// Access to the shown mind: Mind Keys with scopes (a new key is shown once, with a copy button),
// the apps connected over OAuth (revocable), inbound hooks and outbound webhooks (each created here,
// its secret shown once the same way; webhooks with their recent deliveries), and the settings for
// agent writes to verified memories and of critical priority.
// All of it is an owner's: another role is told so, and who to ask.

import { all, api } from "../api.js";
import { append, clear, field, h, when } from "../dom.js";
import { announce, busyButton, confirmDialog, loading, showError } from "../ui.js";
import { optional, who } from "./common.js";
import { aRole, may, roleOf } from "../roles.js";

const SCOPES = ["read", "write", "delete"];
// What a webhook may subscribe to (event_names.SUBSCRIBABLE), grouped; the memory events are the default.
const EVENTS = [
  ["Memories", ["memory.created", "memory.updated", "memory.verified", "memory.deleted", "memory.expiring"]],
  ["Proposals", ["proposal.created", "proposal.accepted", "proposal.rejected"]],
  ["Members", ["member.invited", "member.joined", "member.role_changed", "member.removed", "member.left",
    "member.ownership_transferred", "invitation.revoked", "invitation.declined"]],
];
const REVOKED_BECAUSE = {
  refresh_token_reused: "a refresh token was used twice, so its tokens may have been stolen",
  client: "the app disconnected itself",
};

export async function render(page, ctx) {
  const mind = ctx.state.mind;
  const base = `/minds/${mind.id}`;
  if (!may(mind, "manage")) {
    append(page, h("h1", {}, `Access to ${mind.name}`),
      h("p", {}, `Only an owner manages the keys, connected apps, hooks, webhooks and settings of ${mind.name}; you are ${aRole(roleOf(mind))} here. `,
        h("a", { href: "#/members" }, "Members"), " lists its owners."));
    return;
  }
  const [current, keys, grants, hooks, webhooks, audit] = await Promise.all([
    api.get(base, { mind: false }),
    all(`${base}/keys`, "keys", { limit: 100 }, 5),
    optional(all(`${base}/grants`, "grants", { limit: 100 }, 5), null),
    all(`${base}/hooks`, "hooks", { limit: 100 }, 5),
    all(`${base}/webhooks`, "webhooks", { limit: 100 }, 5),
    optional(api.get(`${base}/audit`, { query: { limit: 20 }, mind: false }), null),
  ]);
  const again = () => ctx.navigate("#/access");
  append(page, 
    h("h1", {}, `Access to ${mind.name}`),
    keysSection(base, keys, again),
    appsSection(base, grants, again),
    settingSection(base, current),
    criticalSection(base, current),
    hooksSection(base, hooks, again),
    webhooksSection(base, webhooks, again),
    auditSection(audit, keys, hooks, grants || []));
}

// What an audit event was about, in words: key "label", hook "label", a webhook's URL, a rename.
function subject(target) {
  if (target.key_id) return `key “${target.label || target.key_id}”${target.scopes ? ` (${target.scopes.join(", ")})` : ""}`;
  if (target.hook_id) return `hook “${target.label || target.hook_id}”`;
  if (target.grant_id) {
    const app = `app “${target.client_name || target.client_id || target.grant_id}”`;
    return `${app}${target.scopes ? ` (${target.scopes.join(", ")})` : ""}${target.reason && target.reason !== "user" ? `: ${REVOKED_BECAUSE[target.reason] || target.reason}` : ""}`;
  }
  if (target.webhook_id) return `webhook ${target.url || target.webhook_id}`;
  if (target.invitation_id || target.user_id) { // member.* and invitation.*: whom, and the role
    const change = target.to ? ` (${target.from} → ${target.to})` : target.role ? ` (${target.role})` : "";
    return `${target.email || target.user_id || "someone"}${change}`;
  }
  if (target.to) return `“${target.from}” → “${target.to}”`;
  if (target.settings) return Object.entries(target.settings).map(([k, v]) => `${k} = ${v}`).join(", ");
  return "";
}

function auditSection(audit, keys, hooks, grants) {
  const section = h("section", { "aria-labelledby": "audit-title" }, h("h2", { id: "audit-title" }, "Recent changes to access"));
  if (!audit) return append(section, h("p", { class: "muted" }, "This deployment keeps no audit yet."));
  const names = new Map([
    ...keys.map((k) => [k.id, `key “${k.label || k.id}”`]),
    ...hooks.map((x) => [x.id, `hook “${x.label || x.id}”`]),
    ...grants.map((g) => [g.id, `app “${g.client_name || g.client_id}”`]),
  ]);
  const events = audit.events || [];
  return append(section, events.length
    ? h("ol", { class: "plain audit", "aria-label": "Newest first" }, events.map((event) => {
      return h("li", {}, when(event.at), " · ", h("strong", {}, event.action), " ", subject(event.target || {}), " · by ", who(event.by, names));
    }))
    : h("p", { class: "muted" }, "Nothing yet."));
}

function keysSection(base, keys, again) {
  const alerts = h("div", { class: "alerts" });
  const reveal = h("div", { class: "reveal", "aria-live": "polite" });
  const label = h("input", { type: "text", name: "label", maxlength: 100 });
  const boxes = SCOPES.map((s) => h("input", { type: "checkbox", name: "scopes", value: s, id: `scope-${s}`, checked: true }));
  const create = h("button", { type: "submit", class: "primary" }, "Create key");
  const form = h("form", { class: "inline", "aria-labelledby": "new-key" },
    h("h3", { id: "new-key" }, "New Mind Key"),
    field("Label", label),
    h("fieldset", {}, h("legend", {}, "Scopes"),
      boxes.map((box) => h("span", { class: "check" }, box, h("label", { for: box.id }, box.value)))),
    create);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const scopes = boxes.filter((b) => b.checked).map((b) => b.value);
    busyButton(create, async () => {
      const body = { scopes };
      if (label.value.trim()) body.label = label.value.trim();
      const made = await api.post(`${base}/keys`, body, { mind: false });
      showOnce(reveal, again, {
        id: "key", title: `Key “${made.label || made.id}” (${(made.scopes || SCOPES).join(", ")})`,
        text: "This is the only time the key is shown. Store it where the agent reads its configuration.",
        label: "Mind Key", secret: made.key, copied: "Key copied.",
      });
    }, alerts, "Could not create the key");
  });
  const rows = keys.map((key) => {
    const revoke = h("button", { type: "button", class: "danger" }, "Revoke");
    revoke.addEventListener("click", async () => {
      if (!await confirmDialog({ title: `Revoke ${key.label || key.id}?`, text: "Agents using it are refused from their next request.", action: "Revoke", danger: true })) return;
      await busyButton(revoke, async () => {
        await api.del(`${base}/keys/${key.id}`, { mind: false });
        announce(`Revoked ${key.label || key.id}.`);
        again();
      }, alerts, "Could not revoke");
    });
    return h("tr", {},
      h("th", { scope: "row" }, key.label || "(no label)", h("br"), h("small", { class: "muted" }, `${key.prefix || ""}… ${key.id}`)),
      h("td", {}, (key.scopes || SCOPES).join(", ")),
      h("td", {}, when(key.created_at)),
      h("td", {}, key.last_used_at ? when(key.last_used_at) : "never"),
      h("td", {}, revoke));
  });
  return h("section", { "aria-labelledby": "keys-title" },
    h("h2", { id: "keys-title" }, "Mind Keys"),
    alerts, reveal,
    h("div", { class: "table-wrap" }, h("table", {},
      h("caption", {}, "Keys (their secrets are never shown again)"),
      h("thead", {}, h("tr", {}, ["Key", "Scopes", "Created", "Last used", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows))),
    form);
}

// Apps connected over OAuth (docs/agents.md): each is a grant on this mind with its scopes; revoking
// stops its tokens at once, and the app must ask again.
function appsSection(base, grants, again) {
  const section = h("section", { "aria-labelledby": "apps-title" }, h("h2", { id: "apps-title" }, "Connected apps"));
  if (!grants) return append(section, h("p", { class: "muted" }, "This deployment does not connect apps over OAuth yet."));
  if (!grants.length) return append(section, h("p", { class: "muted" }, "No app is connected. An app such as Claude connects through its connector settings, and you approve it here in the console."));
  const alerts = h("div", { class: "alerts" });
  const rows = grants.map((grant) => {
    const name = grant.client_name || grant.client_id;
    const revoke = h("button", { type: "button", class: "danger" }, "Revoke");
    revoke.addEventListener("click", async () => {
      if (!await confirmDialog({ title: `Disconnect ${name}?`, text: `Its tokens stop working at once; to use this mind again, ${name} must ask you again.`, action: "Revoke", danger: true })) return;
      await busyButton(revoke, async () => {
        await api.del(`${base}/grants/${encodeURIComponent(grant.id)}`, { mind: false });
        announce(`Disconnected ${name}.`);
        again();
      }, alerts, "Could not revoke");
    });
    return h("tr", {},
      h("th", { scope: "row" }, name, h("br"), h("small", { class: "muted" }, grant.client_id)),
      h("td", {}, grant.redirect_host || "—"),
      h("td", {}, (grant.scopes || []).join(", ")),
      h("td", {}, when(grant.created_at)),
      h("td", {}, grant.last_used_at ? when(grant.last_used_at) : "never"),
      h("td", {}, revoke));
  });
  return append(section, alerts,
    h("div", { class: "table-wrap" }, h("table", {},
      h("caption", {}, "Apps you allowed to use this mind (the name is the app's own)"),
      h("thead", {}, h("tr", {}, ["App", "Sends back to", "Scopes", "Connected", "Last used", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows))));
}

// A secret shown this once (a key, a hook's or a webhook's signing secret), with a copy button;
// "I have stored it" takes it off the page for good.
function showOnce(reveal, again, { id, title, text, label, secret, copied, extra }) {
  const value = h("input", { type: "text", readonly: true, value: secret, id: `new-${id}-value`, class: "secret" });
  const copy = h("button", { type: "button" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(secret);
      announce(copied);
    } catch {
      value.select();
      announce("Select-all done: press Ctrl+C to copy.");
    }
  });
  const done = h("button", { type: "button", class: "primary" }, "I have stored it");
  done.addEventListener("click", () => { clear(reveal); again(); });
  clear(reveal).append(h("div", { class: "card once", role: "group", "aria-labelledby": `once-${id}-title` },
    h("h3", { id: `once-${id}-title` }, title),
    h("p", {}, text),
    extra || null,
    h("div", { class: "field" }, h("label", { for: value.id }, label), h("div", { class: "copy-row" }, value, copy)),
    done));
  value.focus();
  value.select();
}

function settingSection(base, current) {
  const alerts = h("div", { class: "alerts" });
  const settings = current.settings || null;
  const section = h("section", { "aria-labelledby": "setting-title" }, h("h2", { id: "setting-title" }, "Agent writes to verified memories"), alerts);
  if (!settings) {
    section.append(h("p", { class: "muted" }, "This deployment has no such setting yet: an agent's rewrite leaves the memory unverified."));
    return section;
  }
  const options = [
    ["propose", "Propose: keep the verified text, and put the agent's change in the review queue (default)"],
    ["unverify", "Apply: take the agent's change and mark the memory unverified"],
  ];
  const radios = options.map(([value, text]) => {
    const radio = h("input", { type: "radio", name: "agent_writes_to_verified", value, id: `setting-${value}`, checked: settings.agent_writes_to_verified === value });
    return h("div", { class: "check" }, radio, h("label", { for: radio.id }, text));
  });
  const save = h("button", { type: "submit" }, "Save setting");
  const form = h("form", {}, h("fieldset", {}, h("legend", {}, "When an agent changes the content or tags of a verified memory"), radios), save);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = form.querySelector("input[name=agent_writes_to_verified]:checked").value;
    busyButton(save, async () => {
      await api.patch(base, { agent_writes_to_verified: chosen }, { mind: false });
      announce("Setting saved.");
    }, alerts, "Could not save the setting");
  });
  section.append(form);
  return section;
}

// Whether an agent (a key, a hook or a connected app) may make a memory critical.
function criticalSection(base, current) {
  const settings = current.settings || {};
  if (!settings.agent_writes_critical) return null; // an older stack: no such setting
  const alerts = h("div", { class: "alerts" });
  const options = [
    ["allow", "Allow: an agent's critical memory is stored as critical (default)"],
    ["propose", "Propose: store it at high, and put critical in the review queue for you"],
    ["deny", "Deny: refuse an agent's write that makes a memory critical"],
  ];
  const radios = options.map(([value, text]) => {
    const radio = h("input", { type: "radio", name: "agent_writes_critical", value, id: `critical-${value}`, checked: settings.agent_writes_critical === value });
    return h("div", { class: "check" }, radio, h("label", { for: radio.id }, text));
  });
  const save = h("button", { type: "submit" }, "Save critical setting");
  const form = h("form", {}, h("fieldset", {}, h("legend", {}, "When an agent makes a memory critical (critical memories open every recall)"), radios), save);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = form.querySelector("input[name=agent_writes_critical]:checked").value;
    busyButton(save, async () => {
      await api.patch(base, { agent_writes_critical: chosen }, { mind: false });
      announce("Setting saved.");
    }, alerts, "Could not save the setting");
  });
  return h("section", { "aria-labelledby": "critical-title" }, h("h2", { id: "critical-title" }, "Critical priority by agents"), alerts, form);
}

function hooksSection(base, hooks, again) {
  const alerts = h("div", { class: "alerts" });
  const reveal = h("div", { class: "reveal", "aria-live": "polite" });
  const label = h("input", { type: "text", name: "hook-label", maxlength: 100 });
  const create = h("button", { type: "submit", class: "primary" }, "Create hook");
  const form = h("form", { class: "inline", "aria-labelledby": "new-hook" },
    h("h3", { id: "new-hook" }, "New inbound hook"), field("Hook label", label), create);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busyButton(create, async () => {
      const body = label.value.trim() ? { label: label.value.trim() } : {};
      const made = await api.post(`${base}/hooks`, body, { mind: false });
      showOnce(reveal, again, {
        id: "hook", title: `Hook “${made.label || made.id}”`,
        text: "The platform posts memories to this URL, signed with this secret (docs/webhooks.md). This is the only time the secret is shown.",
        extra: h("p", {}, "URL: ", h("code", {}, made.url)),
        label: "Hook signing secret", secret: made.secret, copied: "Secret copied.",
      });
    }, alerts, "Could not create the hook");
  });
  return h("section", { "aria-labelledby": "hooks-title" },
    h("h2", { id: "hooks-title" }, "Inbound hooks"),
    alerts, reveal,
    hooks.length
      ? h("div", { class: "table-wrap" }, h("table", {},
        h("caption", {}, "Platforms that post memories (docs/webhooks.md)"),
        h("thead", {}, h("tr", {}, ["Hook", "URL", "Created", "Last delivery", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, hooks.map((hook) => h("tr", {},
          h("th", { scope: "row" }, hook.label || hook.id),
          h("td", {}, h("code", {}, hook.url)),
          h("td", {}, when(hook.created_at)),
          h("td", {}, hook.last_delivery_at ? when(hook.last_delivery_at) : "none yet"),
          h("td", {}, removal(`${base}/hooks/${hook.id}`, alerts, again, {
            button: "Revoke", title: `Revoke hook ${hook.label || hook.id}?`, done: `Revoked ${hook.label || hook.id}.`,
            text: "Deliveries to its URL are refused at once, whatever they are signed with.",
          })))))))
      : h("p", { class: "muted" }, "No inbound hooks yet: a platform that cannot hold a Mind Key posts signed memories to one."),
    form);
}

// A button that deletes `path` once confirmed, then shows the page again.
function removal(path, alerts, again, { button, title, text, done }) {
  const remove = h("button", { type: "button", class: "danger" }, button);
  remove.addEventListener("click", async () => {
    if (!await confirmDialog({ title, text, action: button, danger: true })) return;
    await busyButton(remove, async () => {
      await api.del(path, { mind: false });
      announce(done);
      again();
    }, alerts, `Could not ${button.toLowerCase()}`);
  });
  return remove;
}

// A new webhook: its endpoint and the events it wants (the memory events to start with).
function webhookForm(base, alerts, reveal, again) {
  const url = h("input", { type: "url", name: "webhook-url", required: true, placeholder: "https://agents.example.com/synapse" });
  const boxes = [];
  const groups = EVENTS.map(([legend, names]) => h("fieldset", {}, h("legend", {}, legend), names.map((name) => {
    const box = h("input", { type: "checkbox", name: "events", value: name, id: `event-${name.replace(/\./g, "-")}`, checked: legend === "Memories" });
    boxes.push(box);
    return h("span", { class: "check" }, box, h("label", { for: box.id }, name));
  })));
  const create = h("button", { type: "submit", class: "primary" }, "Create webhook");
  const form = h("form", { class: "inline", "aria-labelledby": "new-webhook" },
    h("h3", { id: "new-webhook" }, "New webhook"), field("Endpoint URL", url), groups, create);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busyButton(create, async () => {
      const events = boxes.filter((b) => b.checked).map((b) => b.value);
      const made = await api.post(`${base}/webhooks`, { url: url.value.trim(), events }, { mind: false });
      showOnce(reveal, again, {
        id: "webhook", title: `Webhook to ${made.url}`,
        text: "Synapse signs each delivery with this secret; your endpoint checks it (docs/webhooks.md). This is the only time it is shown.",
        label: "Webhook signing secret", secret: made.secret, copied: "Secret copied.",
      });
    }, alerts, "Could not create the webhook");
  });
  return form;
}

function webhooksSection(base, webhooks, again) {
  const alerts = h("div", { class: "alerts" });
  const reveal = h("div", { class: "reveal", "aria-live": "polite" });
  const rows = webhooks.map((webhook) => {
    const slot = h("div", { class: "deliveries" });
    const show = h("button", { type: "button", "aria-expanded": "false" }, "Recent deliveries");
    show.addEventListener("click", async () => {
      if (show.getAttribute("aria-expanded") === "true") {
        clear(slot);
        show.setAttribute("aria-expanded", "false");
        return;
      }
      show.setAttribute("aria-expanded", "true");
      clear(slot).append(loading());
      try {
        const answer = await api.get(`${base}/webhooks/${webhook.id}/deliveries`, { query: { limit: 20 }, mind: false });
        const items = answer.deliveries || [];
        clear(slot).append(items.length
          ? h("ul", { class: "plain" }, items.map((d) => h("li", {},
            `${d.event_type} · attempt ${d.attempt} · ${d.state}`,
            d.status_code ? ` · HTTP ${d.status_code}` : "",
            d.error ? ` · ${d.error}` : "",
            d.latency_ms !== undefined && d.latency_ms !== null ? ` · ${d.latency_ms} ms` : "")))
          : h("p", { class: "muted" }, "No deliveries yet."));
      } catch (error) {
        showError(slot, error, "Could not load deliveries");
      }
    });
    return h("li", { class: "item" },
      h("h3", {}, h("code", {}, webhook.url)),
      h("p", { class: "meta" }, webhook.enabled ? "enabled" : `disabled${webhook.disabled_reason ? ` (${webhook.disabled_reason})` : ""}`,
        " · events: ", (webhook.events || []).join(", "),
        webhook.last_success_at ? h("span", {}, " · last success ", when(webhook.last_success_at)) : null,
        webhook.last_error ? ` · last error: ${webhook.last_error}` : ""),
      h("div", { class: "actions" }, show, removal(`${base}/webhooks/${webhook.id}`, alerts, again, {
        button: "Delete", title: `Delete the webhook to ${webhook.url}?`, done: "Webhook deleted.",
        text: "Synapse stops sending it events at once.",
      })), slot);
  });
  return h("section", { "aria-labelledby": "webhooks-title" },
    h("h2", { id: "webhooks-title" }, "Outbound webhooks"),
    alerts, reveal,
    rows.length ? h("ul", { class: "results" }, rows) : h("p", { class: "muted" }, "No webhooks yet: one tells your agent's endpoint when this mind changes."),
    webhookForm(base, alerts, reveal, again));
}
