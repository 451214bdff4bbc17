// Members of the shown mind (#/members): everyone with their role, email, when they joined and who
// invited them. An owner invites by email or user id with a role (the one-time link is shown once,
// with Copy), lists and revokes pending invitations, changes roles, removes members and transfers
// ownership; every member may leave. The API keeps at least one owner (409 last_owner).

import { all, api, session } from "../api.js";
import { append, clear, field, h, select, when } from "../dom.js";
import { announce, busyButton, confirmDialog } from "../ui.js";
import { ROLES, ROLE_SAYS, aRole, may, roleOf } from "../roles.js";

const LAST_OWNER = "A mind keeps at least one owner: make another member an owner first.";

// The API's 409 last_owner, with what to do about it.
async function keepingAnOwner(work) {
  try {
    return await work();
  } catch (error) {
    if (error.code === "last_owner") error.hint = LAST_OWNER;
    throw error;
  }
}

function nameOf(member) {
  return member.email || member.user_id;
}

export async function render(page, ctx) {
  const mind = ctx.state.mind;
  const base = `/minds/${encodeURIComponent(mind.id)}`;
  const owner = may(mind, "manage");
  const listed = (promise) => promise.catch((error) => {
    if (error.status === 403) return null; // this role does not list them
    throw error;
  });
  let members;
  let invitations;
  try {
    [members, invitations] = await Promise.all([
      listed(all(`${base}/members`, "members", {}, 10)),
      owner ? listed(all(`${base}/invitations`, "invitations", {}, 5)) : null,
    ]);
  } catch (error) {
    if (!error.missingRoute) throw error;
    append(page, h("h1", {}, `Members of ${mind.name}`),
      h("p", { class: "muted" }, "This deployment has no members yet: a mind belongs to the person who created it."));
    return;
  }
  const again = () => ctx.navigate("#/members");
  const alerts = h("div", { class: "alerts" });
  const role = roleOf(mind);
  append(page,
    h("h1", {}, `Members of ${mind.name}`),
    h("p", { class: "lede" }, `You are ${aRole(role)} here: you may ${ROLE_SAYS[role]}.`),
    alerts,
    membersSection(ctx, base, members, owner, alerts, again),
    owner ? inviteSection(base, again) : null,
    owner ? invitationsSection(base, invitations, again) : null,
    owner && members ? transferSection(ctx, base, members, again) : null,
    leaveSection(ctx, base, mind));
}

function membersSection(ctx, base, members, owner, alerts, again) {
  const section = h("section", { "aria-labelledby": "members-title" }, h("h2", { id: "members-title" }, "Members"));
  if (!members) return append(section, h("p", { class: "muted" }, "Only an owner sees the list of members."));
  const me = session.userId;
  const rows = members.map((member, index) => {
    const you = member.user_id === me;
    return h("tr", {},
      h("th", { scope: "row" }, nameOf(member), you ? " (you)" : null,
        member.email ? [h("br"), h("small", { class: "muted" }, member.user_id)] : null),
      h("td", {}, owner ? roleForm(ctx, base, member, index, you, alerts, again) : member.role),
      h("td", {}, when(member.joined_at)),
      h("td", {}, member.invited_by || "—"),
      owner ? h("td", {}, you ? h("span", { class: "muted" }, "Leave below") : removeButton(ctx, base, member, alerts, again)) : null);
  });
  const columns = ["Member", "Role", "Joined", "Invited by", ...(owner ? ["Actions"] : [])];
  // Focusable: at 360 px the table scrolls sideways, and a keyboard must be able to scroll it.
  const wrap = { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Members (scrolls sideways on a small screen)" };
  return append(section, h("div", wrap, h("table", { class: "members" },
    h("caption", {}, `${members.length} ${members.length === 1 ? "member" : "members"} and their roles`),
    h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows))));
}

function roleForm(ctx, base, member, index, you, alerts, again) {
  const choice = select("role", ROLES.map((r) => [r, r]), member.role);
  choice.id = `member-role-${index}`;
  const save = h("button", { type: "submit" }, "Change role");
  const form = h("form", { class: "inline-row" },
    h("label", { for: choice.id, class: "visually-hidden" }, `Role of ${nameOf(member)}`), choice, save);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (choice.value === member.role) { announce(`${nameOf(member)} is ${aRole(member.role)} already.`); return; }
    if (you && member.role === "owner") {
      const sure = await confirmDialog({
        title: `Become ${aRole(choice.value)}?`,
        text: "You will no longer manage members, keys, hooks, webhooks or settings of this mind; another owner can make you owner again.",
        action: "Change my role", danger: true,
      });
      if (!sure) return;
    }
    await busyButton(save, () => keepingAnOwner(async () => {
      await api.patch(`${base}/members/${encodeURIComponent(member.user_id)}`, { role: choice.value }, { mind: false });
      announce(`${you ? "You are" : `${nameOf(member)} is`} now ${aRole(choice.value)}.`);
      if (you) await ctx.refreshMinds();
      again();
    }), alerts, `Could not change the role of ${nameOf(member)}`);
  });
  return form;
}

function removeButton(ctx, base, member, alerts, again) {
  const remove = h("button", { type: "button", class: "danger" }, "Remove…");
  remove.setAttribute("aria-label", `Remove ${nameOf(member)}…`);
  remove.addEventListener("click", async () => {
    const sure = await confirmDialog({
      title: `Remove ${nameOf(member)}?`,
      text: `They can no longer see or change ${ctx.state.mind.name} (their next request is refused); what they wrote stays. To come back, they need a new invitation.`,
      action: "Remove", danger: true,
    });
    if (!sure) { remove.focus(); return; }
    await busyButton(remove, () => keepingAnOwner(async () => {
      await api.del(`${base}/members/${encodeURIComponent(member.user_id)}`, { mind: false });
      announce(`Removed ${nameOf(member)}.`);
      again();
    }), alerts, `Could not remove ${nameOf(member)}`);
  });
  return remove;
}

function inviteSection(base, again) {
  const alerts = h("div", { class: "alerts" });
  const reveal = h("div", { class: "reveal", "aria-live": "polite" });
  const by = [["email", "Email"], ["user_id", "User id"]].map(([value, text]) => {
    const radio = h("input", { type: "radio", name: "invite_by", value, id: `invite-by-${value}`, checked: value === "email" });
    return { radio, box: h("span", { class: "check" }, radio, h("label", { for: radio.id }, text)) };
  });
  const who = h("input", { type: "email", name: "invitee", required: true, maxlength: 254, autocomplete: "off", id: "invitee" });
  const whoLabel = h("label", { for: who.id }, "Their email");
  const whoHint = h("small", { id: "invitee-hint", class: "hint" }, "They accept with an account whose verified email is this one.");
  who.setAttribute("aria-describedby", whoHint.id);
  for (const { radio } of by) {
    radio.addEventListener("change", () => {
      const email = radio.value === "email"; // "change" fires on the radio just chosen
      who.type = email ? "email" : "text";
      whoLabel.textContent = email ? "Their email" : "Their user id";
      whoHint.textContent = email
        ? "They accept with an account whose verified email is this one."
        : "The user id (the sub of their sign-in token) they accept with.";
    });
  }
  const role = select("role", ROLES.map((r) => [r, r]), "viewer");
  const roleHint = h("small", { id: "invite-role-hint", class: "hint" }, `A viewer may ${ROLE_SAYS.viewer}.`);
  role.id = "invite-role";
  role.setAttribute("aria-describedby", roleHint.id);
  role.addEventListener("change", () => { roleHint.textContent = `${aRole(role.value).replace(/^a/, "A")} may ${ROLE_SAYS[role.value]}.`; });
  const create = h("button", { type: "submit", class: "primary" }, "Create invitation link");
  const form = h("form", { class: "inline", "aria-labelledby": "invite-title" },
    h("fieldset", {}, h("legend", {}, "Invite by"), by.map((b) => b.box)),
    h("div", { class: "field" }, whoLabel, who, whoHint),
    h("div", { class: "field" }, h("label", { for: role.id }, "Role"), role, roleHint),
    create);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const kind = by.find((b) => b.radio.checked).radio.value;
    busyButton(create, async () => {
      const made = await api.post(`${base}/invitations`, { role: role.value, [kind]: who.value.trim() }, { mind: false });
      showLinkOnce(reveal, made, again);
    }, alerts, "Could not create the invitation");
  });
  return h("section", { "aria-labelledby": "invite-title" },
    h("h2", { id: "invite-title" }, "Invite someone"),
    h("p", { class: "muted" }, "The invitation is a link that works once, for 7 days. Synapse sends no email: you send the link."),
    alerts, reveal, form);
}

function showLinkOnce(reveal, made, again) {
  const invitation = made.invitation || {};
  const invitee = invitation.email || invitation.user_id;
  const value = h("input", { type: "text", readonly: true, value: made.link, id: "invitation-link", class: "secret" });
  const copy = h("button", { type: "button" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(made.link);
      announce("Link copied.");
    } catch {
      value.select();
      announce("Select-all done: press Ctrl+C to copy.");
    }
  });
  const done = h("button", { type: "button", class: "primary" }, "I have sent it");
  done.addEventListener("click", () => { clear(reveal); again(); });
  clear(reveal).append(h("div", { class: "card once", role: "group", "aria-labelledby": "link-title" },
    h("h3", { id: "link-title" }, `Invitation for ${invitee} as ${invitation.role}`),
    h("p", {}, "This is the only time the link is shown: send it to them. It works once, until ",
      when(invitation.expires_at), invitation.email ? `, for the account whose verified email is ${invitation.email}.` : `, for user id ${invitation.user_id}.`),
    h("div", { class: "field" }, h("label", { for: value.id }, "Invitation link"), h("div", { class: "copy-row" }, value, copy)),
    done));
  value.focus();
  value.select();
}

function invitationsSection(base, invitations, again) {
  const section = h("section", { "aria-labelledby": "invitations-title" }, h("h2", { id: "invitations-title" }, "Pending invitations"));
  if (!invitations) return append(section, h("p", { class: "muted" }, "Invitations could not be listed."));
  const pending = invitations.filter((i) => !i.status || i.status === "pending");
  if (!pending.length) return append(section, h("p", { class: "muted" }, "No invitation waits for an answer."));
  const alerts = h("div", { class: "alerts" });
  const rows = pending.map((invitation) => {
    const invitee = invitation.email || invitation.user_id;
    const revoke = h("button", { type: "button", class: "danger", "aria-label": `Revoke the invitation for ${invitee}` }, "Revoke");
    revoke.addEventListener("click", async () => {
      const sure = await confirmDialog({ title: `Revoke the invitation for ${invitee}?`, text: "Its link stops working at once.", action: "Revoke", danger: true });
      if (!sure) { revoke.focus(); return; }
      await busyButton(revoke, async () => {
        await api.del(`${base}/invitations/${encodeURIComponent(invitation.id)}`, { mind: false });
        announce(`Revoked the invitation for ${invitee}.`);
        again();
      }, alerts, "Could not revoke");
    });
    return h("tr", {},
      h("th", { scope: "row" }, invitee, h("br"), h("small", { class: "muted" }, invitation.email ? "by email" : "by user id")),
      h("td", {}, invitation.role),
      h("td", {}, when(invitation.created_at)),
      h("td", {}, when(invitation.expires_at)),
      h("td", {}, invitation.invited_by || "—"),
      h("td", {}, revoke));
  });
  return append(section, alerts, h("div", { class: "table-wrap" }, h("table", {},
    h("caption", {}, "Invitations not answered yet (their links are never shown again)"),
    h("thead", {}, h("tr", {}, ["Invited", "Role", "Created", "Expires", "Invited by", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows))));
}

function transferSection(ctx, base, members, again) {
  const section = h("section", { "aria-labelledby": "transfer-title" }, h("h2", { id: "transfer-title" }, "Transfer ownership"));
  const others = members.filter((m) => m.user_id !== session.userId && m.role !== "owner");
  if (!others.length) return append(section, h("p", { class: "muted" }, "Ownership goes to another member: invite them first."));
  const alerts = h("div", { class: "alerts" });
  const to = select("user_id", others.map((m) => [m.user_id, `${nameOf(m)} (${m.role})`]), others[0].user_id);
  const keep = select("keep_role", [["reviewer", "reviewer"], ["editor", "editor"], ["viewer", "viewer"], ["owner", "owner (stay an owner too)"]], "reviewer");
  const go = h("button", { type: "submit", class: "danger" }, "Transfer ownership…");
  const form = h("form", { class: "inline" },
    field("New owner", to),
    field("Your role afterwards", keep, "Unless you stay an owner, members, keys, hooks, webhooks and settings become theirs alone to manage."),
    go);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const member = others.find((m) => m.user_id === to.value);
    const sure = await confirmDialog({
      title: `Make ${nameOf(member)} the owner?`,
      text: keep.value === "owner"
        ? `They become an owner of ${ctx.state.mind.name}, and you stay one.`
        : `They become owner of ${ctx.state.mind.name} and you become ${aRole(keep.value)}. Only an owner can undo it.`,
      action: "Transfer ownership", danger: true,
    });
    if (!sure) { go.focus(); return; }
    await busyButton(go, () => keepingAnOwner(async () => {
      await api.post(`${base}/transfer`, { user_id: member.user_id, keep_role: keep.value }, { mind: false });
      announce(`${nameOf(member)} is now an owner; you are ${aRole(keep.value)}.`);
      await ctx.refreshMinds();
      again();
    }), alerts, "Could not transfer ownership");
  });
  return append(section, h("p", { class: "muted" }, "Make another member the owner of this mind, and step down yourself."), alerts, form);
}

function leaveSection(ctx, base, mind) {
  const alerts = h("div", { class: "alerts" });
  const leave = h("button", { type: "button", class: "danger" }, `Leave ${mind.name}…`);
  leave.addEventListener("click", async () => {
    const sure = await confirmDialog({
      title: `Leave ${mind.name}?`,
      text: "You can no longer see or change it; to come back, an owner must invite you again.",
      action: "Leave", danger: true,
    });
    if (!sure) { leave.focus(); return; }
    await busyButton(leave, () => keepingAnOwner(async () => {
      await api.del(`${base}/members/${encodeURIComponent(session.userId)}`, { mind: false });
      session.mindId = null;
      await ctx.refreshMinds();
      announce(`You left ${mind.name}.`);
      ctx.navigate("#/minds");
    }), alerts, `Could not leave ${mind.name}`);
  });
  return h("section", { "aria-labelledby": "leave-title" },
    h("h2", { id: "leave-title" }, "Leave this mind"),
    h("p", { class: "muted" }, "What you wrote stays; you lose access at once."),
    alerts, leave);
}
