// The consent page of an app connecting over OAuth (#/connect/<request_id>, where GET /oauth/authorize
// sends the browser): which app asks and where the answer goes, the mind it may use and its scopes,
// Approve or Deny; then the browser goes back to the app. The app's name is its own claim, so the
// host it returns to is shown as prominently; both are put on the page as text only. A request that
// is itself wrong (the API's `error`) is only shown: Synapse sends nobody to the app's address with
// an error before the person has seen it (RFC 9700 §4.11.2), so going back is their choice.

import { api, session } from "../api.js";
import { append, clear, field, h, when } from "../dom.js";
import { announce, busyButton, errorBox } from "../ui.js";
import { may } from "../roles.js";

const SCOPES = [
  ["read", "read and recall its memories"],
  ["write", "store and change memories (as an agent: unverified until you verify them)"],
  ["delete", "delete memories"],
];

export async function render(page, ctx) {
  const requestId = ctx.arg;
  let asked;
  try {
    asked = await api.get(`/oauth/requests/${encodeURIComponent(requestId)}`, { mind: false });
  } catch (error) {
    if (error.status !== 404) throw error;
    append(page,
      h("h1", {}, "This request can no longer be answered"),
      errorBox(error),
      h("p", {}, "A request to connect lasts 10 minutes and is answered once: go back to the app and connect it again."));
    return;
  }
  const client = asked.client || {};
  const name = client.name || client.id || "An app";
  const host = client.redirect_host || "";
  if (asked.error) {
    page.append(faulty(requestId, name, host, asked.error));
    return;
  }
  append(page,
    h("h1", {}, `${name} wants to use a mind of yours`),
    h("p", { class: "consent-host" }, "Whether you approve or deny, you will be sent back to ", h("strong", { id: "redirect-host" }, host), "."),
    h("p", { class: "muted" },
      `“${name}” is the name the app gave itself; `, h("strong", {}, host), " is where its answer goes. ",
      "Approve only if you started this from that app. The request expires ", when(asked.expires_at), "."));
  const alerts = h("div", { class: "alerts" });
  page.append(alerts);
  // Only an owner connects an app to a mind.
  const owned = ctx.state.minds.filter((m) => may(m, "manage"));
  if (owned.length === 0) {
    page.append(firstMind(ctx, alerts, ctx.state.minds.length > 0));
    page.append(decision(requestId, null, [], alerts, host));
    return;
  }
  const minds = h("select", { name: "mind_id" },
    owned.map((m) => h("option", { value: m.id, selected: ctx.state.mind && m.id === ctx.state.mind.id }, m.name)));
  const requested = new Set(asked.scopes || []);
  const boxes = SCOPES.map(([scope]) => h("input", { type: "checkbox", name: "scopes", value: scope, id: `grant-${scope}`, checked: requested.has(scope) }));
  page.append(
    field("Mind the app may use", minds, "It sees and changes this mind only; you can disconnect it on the Access page."),
    h("fieldset", { class: "scopes" }, h("legend", {}, "What it may do"),
      boxes.map((box, i) => h("div", { class: "check" }, box, h("label", { for: box.id }, h("strong", {}, box.value), ` — ${SCOPES[i][1]}`)))),
    decision(requestId, () => ({ mind_id: minds.value, scopes: boxes.filter((b) => b.checked).map((b) => b.value) }), boxes, alerts, host));
}

// A request the API refused (a wrong response_type, PKCE or resource): what is wrong, and a way back
// to the app with that error (a denial) that the person may take or not.
function faulty(requestId, name, host, error) {
  const alerts = h("div", { class: "alerts" });
  const back = h("button", { type: "button" }, "Go back to the app");
  back.addEventListener("click", async () => {
    let redirectTo;
    await busyButton(back, async () => {
      const decided = await api.post(`/oauth/requests/${encodeURIComponent(requestId)}`, { approve: false }, { mind: false });
      redirectTo = decided.redirect_to;
    }, alerts, "Could not answer the request");
    if (!redirectTo) return;
    back.disabled = true;
    announce(`Sending you back to ${host}…`);
    location.assign(redirectTo);
  });
  return h("div", {},
    h("h1", {}, `${name} sent a request that cannot be approved`),
    h("p", {}, h("code", {}, error.error || ""), ": ", error.error_description || ""),
    h("p", { class: "consent-host" }, "Going back tells the app at ", h("strong", { id: "redirect-host" }, host), " what was wrong."),
    h("p", { class: "muted" }, "Go back only if you started this from that app; otherwise close this page."),
    alerts,
    h("div", { class: "actions consent-actions" }, back));
}

// Approve / Deny: one decision, then the browser leaves for the app's redirect URI.
function decision(requestId, chosen, boxes, alerts, host) {
  const approve = h("button", { type: "button", class: "primary", disabled: !chosen }, "Approve");
  const deny = h("button", { type: "button" }, "Deny");
  const answer = async (button, body) => {
    const other = button === approve ? deny : approve;
    other.disabled = true;
    let redirectTo;
    await busyButton(button, async () => {
      const decided = await api.post(`/oauth/requests/${encodeURIComponent(requestId)}`, body, { mind: false });
      redirectTo = decided.redirect_to;
    }, alerts, body.approve ? "Could not approve" : "Could not deny");
    if (!redirectTo) {
      other.disabled = button === deny && !chosen;
      return;
    }
    approve.disabled = true;
    deny.disabled = true;
    for (const box of boxes) box.disabled = true;
    announce(`Sending you back to ${host}…`);
    location.assign(redirectTo);
  };
  approve.addEventListener("click", () => answer(approve, { approve: true, ...chosen() }));
  deny.addEventListener("click", () => answer(deny, { approve: false }));
  return h("div", { class: "actions consent-actions" }, approve, deny);
}

// No mind yet (or none the person owns): create one here, so the request (and this page) are not
// lost on the way.
function firstMind(ctx, alerts, sharedOnly) {
  const name = h("input", { type: "text", name: "name", required: true, maxlength: 100 });
  const create = h("button", { type: "submit" }, "Create mind");
  const form = h("form", { class: "inline card", "aria-labelledby": "consent-first-mind" },
    h("h2", { id: "consent-first-mind" }, sharedOnly ? "You own no mind yet" : "You have no mind yet"),
    h("p", {}, "Create one for the app to use, then approve."),
    field("Name", name), create);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busyButton(create, async () => {
      const made = await api.post("/minds", { name: name.value.trim() }, { mind: false });
      session.mindId = made.mind.id;
      await ctx.refreshMinds();
      clear(alerts);
      ctx.navigate(location.hash);
    }, alerts, "Could not create the mind");
  });
  return form;
}
