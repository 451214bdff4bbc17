// An invitation's page (#/accept?token=…, the link an owner sent): what is offered (POST
// /invitations/preview: the mind, the role, who invited, until when), then Accept or Decline.
// Signed out, the person signs in first and comes back here (through a hosted UI too: auth.js keeps
// the page). Once answered, the token leaves the address bar and the tab's history entry.

import { api, session } from "../api.js";
import { append, clear, h, when } from "../dom.js";
import { announce, busyButton, errorBox } from "../ui.js";
import { ROLE_SAYS, aRole } from "../roles.js";

export async function render(page, ctx) {
  const token = ctx.params.get("token") || "";
  if (!token) {
    append(page, h("h1", {}, "This link has no invitation in it"),
      h("p", {}, "Open the whole link you were sent; if it was cut short, ask the person who invited you to send it again."));
    return;
  }
  let offer;
  try {
    offer = await api.post("/invitations/preview", { token }, { mind: false });
  } catch (error) {
    if (!(error.status >= 400 && error.status < 500)) throw error;
    append(page,
      h("h1", {}, "This invitation can no longer be answered"),
      errorBox(error),
      h("p", {}, "An invitation lasts 7 days and is answered once, and its owner may revoke it: ask the person who invited you for a new link."));
    return;
  }
  const invitation = offer.invitation || {};
  const mind = offer.mind || {};
  const alerts = h("div", { class: "alerts" });
  append(page,
    h("h1", {}, `You are invited to ${mind.name}`),
    h("p", { class: "consent-host" }, "As ", h("strong", { id: "offered-role" }, invitation.role), `: you may ${ROLE_SAYS[invitation.role] || "what the role allows"}.`),
    h("p", { class: "muted" },
      invitation.invited_by ? `Invited by ${invitation.invited_by}; ` : "", "the invitation expires ", when(invitation.expires_at), "."),
    invitation.email
      ? h("p", {}, `It is for ${invitation.email}: accept while signed in with the account whose verified email that is.`)
      : null,
    h("p", { class: "muted" }, `You are signed in as ${session.userId || "(unknown)"}. To answer as someone else, sign out first.`),
    alerts,
    decision(page, ctx, token, mind, invitation, alerts));
}

function decision(page, ctx, token, mind, invitation, alerts) {
  const accept = h("button", { type: "button", class: "primary" }, "Accept");
  const decline = h("button", { type: "button" }, "Decline");
  accept.addEventListener("click", () => busyButton(accept, async () => {
    // An invitation by email is matched against the sign-in's email: Cognito puts it in the id token.
    const asWho = invitation.email && session.idToken ? { token: session.idToken } : {};
    const joined = await api.post("/invitations/accept", { token }, { mind: false, ...asWho });
    const name = (joined.mind && joined.mind.name) || mind.name;
    session.mindId = (joined.mind && joined.mind.id) || mind.id;
    await ctx.refreshMinds();
    forgetToken("#/queue");
    announce(`You joined ${name} as ${aRole(joined.role || invitation.role)}.`);
    ctx.navigate("#/queue");
  }, alerts, "Could not accept"));
  decline.addEventListener("click", () => busyButton(decline, async () => {
    await api.post("/invitations/decline", { token }, { mind: false });
    forgetToken("#/accept");
    const heading = h("h1", { tabindex: "-1" }, "Invitation declined");
    clear(page).append(heading,
      h("p", {}, `You declined the invitation to ${mind.name}; its link no longer works.`),
      h("p", {}, h("a", { href: "#/minds" }, "Your minds")));
    heading.focus();
    announce(`Declined the invitation to ${mind.name}.`);
  }, alerts, "Could not decline"));
  return h("div", { class: "actions consent-actions" }, accept, decline);
}

// The secret has done its work: drop it from the address bar without a new history entry.
function forgetToken(hash) {
  history.replaceState(null, "", `${location.pathname}${location.search}${hash}`);
}
