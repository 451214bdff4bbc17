// The API client: the person's JWT (kept in sessionStorage, never localStorage or a URL), the mind
// addressed by X-Mind-Id, a progress indicator while requests are in flight, and errors in words.

const TOKEN = "synapse.console.token";
const ID_TOKEN = "synapse.console.idtoken";
const MIND = "synapse.console.mind";

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }

  // The deployment has no such route yet (an older stack): the console hides what needs it.
  get missingRoute() {
    return this.status === 404 && /^No route /.test(this.message);
  }

  describe() {
    return this.requestId ? `${this.message} (request id ${this.requestId})` : this.message;
  }
}

let inFlight = 0;
const listeners = { busy: [], unauthorized: [], roleChanged: [] };

export function on(event, fn) {
  listeners[event].push(fn);
}

function busy(delta) {
  inFlight += delta;
  for (const fn of listeners.busy) fn(inFlight > 0);
}

export const session = {
  get token() { return sessionStorage.getItem(TOKEN); },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN, value);
    else sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(ID_TOKEN); // it belongs to the sign-in that set the token
  },
  // Cognito's id token from the same sign-in, which carries the person's email (its access token
  // does not): accepting an invitation by email sends it (docs/auth.md, "Invitations").
  get idToken() { return sessionStorage.getItem(ID_TOKEN); },
  set idToken(value) {
    if (value) sessionStorage.setItem(ID_TOKEN, value);
    else sessionStorage.removeItem(ID_TOKEN);
  },
  get mindId() { return sessionStorage.getItem(MIND); },
  set mindId(value) {
    if (value) sessionStorage.setItem(MIND, value);
    else sessionStorage.removeItem(MIND);
  },
  // The user id the API knows the person by (the JWT's sub), read from the token only to say "you":
  // the API checks the token, the console never trusts this for anything else.
  get userId() {
    try {
      const part = (this.token || "").split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0)))).sub || null;
    } catch {
      return null;
    }
  },
};

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

export async function request(method, path, options = {}) {
  const headers = { Accept: options.text ? "text/plain" : "application/json" };
  const token = options.token ?? session.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (options.mind !== false && session.mindId) headers["X-Mind-Id"] = session.mindId;
  if (options.ifMatch !== undefined) headers["If-Match"] = String(options.ifMatch);
  let body;
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  busy(1);
  let response;
  try {
    response = await fetch(path + query(options.query), { method, headers, body, cache: "no-store" });
  } catch (error) {
    throw new ApiError(0, "network", `The service could not be reached (${error.message}).`, null);
  } finally {
    busy(-1);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  if (!response.ok) {
    let payload = {};
    try { payload = JSON.parse(text); } catch { /* not JSON: keep the status line */ }
    const error = payload.error || {};
    const failure = new ApiError(
      response.status,
      error.code || "http_error",
      error.message || `The service answered ${response.status} ${response.statusText}.`,
      payload.request_id || null,
    );
    if (response.status === 401) for (const fn of listeners.unauthorized) fn(failure);
    // A 403 naming the role needed: the person's role changed since the console read it.
    const needsRole = Array.isArray(error.details) && error.details.some((d) => d && d.role);
    if (response.status === 403 && needsRole) for (const fn of listeners.roleChanged) fn(failure);
    throw failure;
  }
  if (options.text) return text;
  return text ? JSON.parse(text) : null;
}

export const api = {
  get: (path, options) => request("GET", path, options),
  post: (path, body, options = {}) => request("POST", path, { ...options, body: body ?? {} }),
  put: (path, body, options = {}) => request("PUT", path, { ...options, body }),
  patch: (path, body, options = {}) => request("PATCH", path, { ...options, body }),
  del: (path, options) => request("DELETE", path, options),
};

// Every page of a list, following next_cursor (bounded: the console never needs thousands).
export async function all(path, field, params = {}, maxPages = 10) {
  const items = [];
  let cursor;
  for (let page = 0; page < maxPages; page += 1) {
    const answer = await api.get(path, { query: { ...params, cursor } });
    items.push(...(answer[field] || []));
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return items;
}
