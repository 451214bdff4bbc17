// Signing a person in. Locally (make run) one click fetches the runner's dev JWT; with a Cognito
// stack the hosted UI's authorization-code flow with PKCE; otherwise the person pastes a JWT.
// The token is kept in sessionStorage only; the code_verifier too, until the code is exchanged, and
// the page the person was on (an app's consent, #/connect/…), which the hosted UI's return drops.

import { api, session } from "./api.js";
import { field, h } from "./dom.js";

const VERIFIER = "synapse.console.pkce";
const STATE = "synapse.console.state";
const RETURN = "synapse.console.return";

export async function loadConfig() {
  return api.get("/console/config.json", { mind: false, token: "" });
}

function redirectUri() {
  return `${location.origin}${location.pathname}`;
}

function randomText(bytes) {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return base64url(data);
}

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function startCognito(cognito) {
  const verifier = randomText(48);
  const state = randomText(16);
  sessionStorage.setItem(VERIFIER, verifier);
  sessionStorage.setItem(STATE, state);
  if (location.hash.startsWith("#/")) sessionStorage.setItem(RETURN, location.hash);
  else sessionStorage.removeItem(RETURN);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const params = new URLSearchParams({
    response_type: "code",
    client_id: cognito.client_id,
    redirect_uri: redirectUri(),
    scope: "openid email profile",
    state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: "S256",
  });
  location.assign(`${cognito.domain}/oauth2/authorize?${params}`);
}

// Back from the hosted UI with ?code=…&state=…: exchange the code, drop it from the address bar, and
// put back the page the person left from (/console comes back without its #/…).
export async function finishCognito(config) {
  const params = new URLSearchParams(location.search);
  const code = params.get("code");
  if (!code || !config.cognito) return false;
  const expected = sessionStorage.getItem(STATE);
  const verifier = sessionStorage.getItem(VERIFIER);
  const back = sessionStorage.getItem(RETURN);
  sessionStorage.removeItem(STATE);
  sessionStorage.removeItem(VERIFIER);
  sessionStorage.removeItem(RETURN);
  const hash = location.hash || (back && back.startsWith("#/") ? back : "");
  history.replaceState(null, "", redirectUri() + hash);
  if (!verifier || params.get("state") !== expected) throw new Error("The sign-in answer did not match this tab; sign in again.");
  const response = await fetch(`${config.cognito.domain}/oauth2/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: config.cognito.client_id,
      code,
      redirect_uri: redirectUri(),
      code_verifier: verifier,
    }),
  });
  const tokens = await response.json().catch(() => ({}));
  if (!response.ok || !tokens.access_token) {
    throw new Error(`Cognito refused the sign-in: ${tokens.error_description || tokens.error || response.status}.`);
  }
  session.token = tokens.access_token;
  session.idToken = tokens.id_token || null;
  return true;
}

export function signInView(config, onSignedIn, problem, purpose) {
  const options = [];
  if (config.dev_signin) {
    options.push(
      h("section", { class: "card", "aria-labelledby": "dev-signin" },
        h("h2", { id: "dev-signin" }, "Local runner"),
        h("p", {}, "make run signs the dev user (local-user) in with one click. This exists only on your machine."),
        h("button", {
          type: "button",
          class: "primary",
          onclick: async (event) => {
            event.currentTarget.disabled = true;
            try {
              const answer = await api.get("/console/dev-token.json", { mind: false, token: "" });
              session.token = answer.token;
              onSignedIn();
            } catch (error) {
              event.target.disabled = false;
              onSignedIn(error);
            }
          },
        }, "Sign in as local-user"),
      ),
    );
  }
  if (config.cognito) {
    options.push(
      h("section", { class: "card", "aria-labelledby": "cognito-signin" },
        h("h2", { id: "cognito-signin" }, "Your account"),
        h("button", { type: "button", class: "primary", onclick: () => startCognito(config.cognito) }, "Sign in"),
      ),
    );
  }
  const input = h("textarea", { name: "token", rows: 3, required: true, autocomplete: "off", spellcheck: "false" });
  options.push(
    h("section", { class: "card", "aria-labelledby": "paste-signin" },
      h("h2", { id: "paste-signin" }, config.cognito || config.dev_signin ? "Or paste a token" : "Paste a token"),
      h("form", {
        onsubmit: (event) => {
          event.preventDefault();
          session.token = input.value.trim();
          onSignedIn();
        },
      },
      field("JWT (kept in this tab only)", input, "From your identity provider, or python -m infra.token for a shared-secret stack."),
      h("button", { type: "submit" }, "Use this token")),
    ),
  );
  return h("div", { class: "signin" },
    h("h1", {}, "Sign in to the Synapse console"),
    purpose ? h("p", { class: "lede" }, purpose) : null,
    problem ? h("p", { class: "error", role: "alert" }, problem) : null,
    options);
}
