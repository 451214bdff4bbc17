// The console's shell: sign-in, the mind picker (each mind with the person's role on it), the hash
// router (#/queue, #/browse, #/memory/<id>, #/expiring, #/recall, #/minds, #/members, #/access,
// #/connect/<request_id>, an app's OAuth consent, and #/accept?token=…, an invitation) and the
// progress indicator.

import { all, on, session } from "./api.js";
import { finishCognito, loadConfig, signInView } from "./auth.js";
import { clear, h } from "./dom.js";
import { announce, describe, errorBox, loading } from "./ui.js";
import * as queue from "./views/queue.js";
import * as browse from "./views/browse.js";
import * as memory from "./views/memory.js";
import * as expiring from "./views/expiring.js";
import * as recall from "./views/recall.js";
import * as minds from "./views/minds.js";
import * as access from "./views/access.js";
import { aRole, may, roleOf } from "./roles.js";

// Pages loaded only when opened (the consent page when an app sends someone to it, an invitation's
// page, the members): the queue does not pay for them.
const later = (file) => ({ render: async (page, ctx) => (await import(file)).render(page, ctx) });
const connect = later("./views/connect.js");
const members = later("./views/members.js");
const accept = later("./views/accept.js");
const ROUTES = { queue, browse, memory, expiring, recall, minds, members, access, connect, accept };
const TITLES = {
  queue: "Review queue", browse: "Browse and search", memory: "Memory", expiring: "Expiring soon",
  recall: "Recall preview", minds: "Minds", members: "Members", access: "Keys, hooks and webhooks",
  connect: "Connect an app", accept: "Invitation",
};
// Pages that work without a mind: the consent page offers to create one itself, and an invitation
// brings one.
const MINDLESS = ["minds", "connect", "accept"];
// Why the sign-in page is shown, for the pages a link from elsewhere opens.
const PURPOSES = {
  connect: "An app asks to use one of your minds: sign in to answer it.",
  accept: "You have been invited to share a mind: sign in to answer the invitation.",
};

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const picker = document.getElementById("mind");
const account = document.getElementById("account");
let config = null;
const state = { minds: [], mind: null };

on("busy", (isBusy) => { document.getElementById("progress").hidden = !isBusy; });
// Someone changed this person's role meanwhile: read the roles again, so the menu and the next page
// offer what the role allows now (the page on show keeps its error until then).
on("roleChanged", () => { refreshMinds().catch(() => {}); });
on("unauthorized", () => {
  session.token = null;
  showSignIn("Your sign-in has expired or was refused: sign in again.");
});

function parseHash() {
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const [name, ...rest] = path.split("/");
  return { name: ROUTES[name] ? name : "queue", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(search) };
}

export function setBadge(count, more) {
  const badge = document.getElementById("queue-count");
  badge.textContent = `${count}${more ? "+" : ""}`;
  badge.classList.toggle("zero", !count);
}

async function refreshMinds() {
  state.minds = await all("/minds", "minds", {}, 5);
  const chosen = state.minds.find((m) => m.id === session.mindId) || state.minds[0] || null;
  state.mind = chosen;
  session.mindId = chosen ? chosen.id : null;
  clear(picker);
  for (const mind of state.minds) {
    picker.append(h("option", { value: mind.id, selected: mind === chosen }, mind.role ? `${mind.name} (${mind.role})` : mind.name));
  }
  picker.disabled = state.minds.length === 0;
  showRole();
  return state.minds;
}

// The menu offers what the person's role on the shown mind allows (Access: owners only).
function showRole() {
  nav.querySelector('[data-route="access"]').hidden = Boolean(state.mind) && !may(state.mind, "manage");
  document.body.dataset.role = state.mind ? roleOf(state.mind) : "";
}

const context = {
  state,
  refreshMinds,
  setBadge,
  navigate: (hash) => { if (location.hash === hash) route(); else location.hash = hash; },
};

let generation = 0;
async function route() {
  if (!session.token) return;
  const { name, arg, params } = parseHash();
  generation += 1;
  const mine = generation;
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.route === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${TITLES[name]} · Synapse console`;
  clear(main).append(h("div", { class: "page" }, h("h1", {}, TITLES[name]), loading()));
  // main is busy from here until this route's page is shown: a page loads in several rounds of
  // requests, so "no request in flight" alone does not mean the page is there.
  main.setAttribute("aria-busy", "true");
  const page = h("div", { class: "page" });
  try {
    if (!state.mind && !MINDLESS.includes(name)) {
      clear(main).append(h("div", { class: "page" },
        h("h1", {}, TITLES[name]),
        h("p", {}, "You have no mind yet. ", h("a", { href: "#/minds" }, "Create one"), " to start.")));
      return;
    }
    await ROUTES[name].render(page, { ...context, arg, params, isCurrent: () => mine === generation });
    if (mine !== generation) return;
    clear(main).append(page);
  } catch (error) {
    if (mine !== generation) return;
    clear(main).append(h("div", { class: "page" }, h("h1", {}, TITLES[name]), errorBox(error, "This page could not load")));
  } finally {
    if (mine === generation) main.setAttribute("aria-busy", "false");
  }
  if (!main.contains(document.activeElement) || document.activeElement === document.body) {
    const heading = main.querySelector("h1");
    if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
  }
}

function showSignIn(problem) {
  document.body.classList.add("signed-out");
  const purpose = PURPOSES[parseHash().name] || null;
  clear(main).append(signInView(config, async (error) => {
    if (error) { showSignIn(describe(error)); return; }
    await start();
  }, problem, purpose));
  const heading = main.querySelector("h1");
  if (heading) { heading.tabIndex = -1; heading.focus(); }
}

async function start() {
  try {
    await refreshMinds();
  } catch (error) {
    session.token = null;
    showSignIn(describe(error));
    return;
  }
  document.body.classList.remove("signed-out");
  announce("Signed in.");
  await route();
  if (parseHash().name !== "queue") queue.refreshBadge(context); // the queue page counts itself
}

picker.addEventListener("change", async () => {
  session.mindId = picker.value;
  state.mind = state.minds.find((m) => m.id === picker.value) || null;
  showRole();
  announce(`Now showing ${state.mind ? `${state.mind.name}${state.mind.role ? `, where you are ${aRole(state.mind.role)}` : ""}` : "no mind"}.`);
  await route();
  if (parseHash().name !== "queue") queue.refreshBadge(context); // the queue page counts itself
});
account.addEventListener("click", () => {
  session.token = null;
  session.mindId = null;
  showSignIn("Signed out.");
});
window.addEventListener("hashchange", route);

async function boot() {
  clear(main).append(loading("Starting…"));
  try {
    config = await loadConfig();
    await finishCognito(config);
    if (!session.token) showSignIn();
    else await start();
  } catch (error) {
    config = config || { dev_signin: false, cognito: null };
    showSignIn(describe(error));
  } finally {
    document.body.dataset.ready = "true"; // the tests' "interactive" mark
    performance.mark("console-ready");
  }
}

boot();
