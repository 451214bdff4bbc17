// What the person's role on the shown mind lets them do (docs/auth.md, "Roles"), so the console
// offers only what the API would allow: it hides what a role may not do instead of answering 403s.
// The API decides; this keeps the buttons honest. A stack without members answers no role: there
// the person who sees a mind created it, and owns it.

export const ROLES = ["owner", "reviewer", "editor", "viewer"];

// What each role may do, to follow "may": "A reviewer may read, write, verify…".
export const ROLE_SAYS = {
  owner: "do everything, including managing members and invitations, keys, hooks, webhooks and settings, and deleting the mind",
  reviewer: "read, write, verify, accept and reject proposed changes, and restore revisions",
  editor: "read and write; what an editor writes stays unverified until a reviewer verifies it",
  viewer: "only read (recall, search, lists and history)",
};

// The least role each action needs: the API's role table (api/routes.py ROUTE_ROLES), which
// tests/unit/test_console.py holds this to.
const NEEDS = {
  read: "viewer",
  write: "editor",
  delete: "editor",
  verify: "reviewer",
  decide: "reviewer",
  restore: "reviewer",
  manage: "owner",
};

export function roleOf(mind) {
  return (mind && mind.role) || "owner";
}

export function may(mind, action) {
  return ROLES.indexOf(roleOf(mind)) <= ROLES.indexOf(NEEDS[action]);
}

// "an editor", "a reviewer": for sentences.
export function aRole(role) {
  return `${/^[aeiou]/.test(role) ? "an" : "a"} ${role}`;
}
