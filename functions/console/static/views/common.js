// Look-ups the pages share: who wrote a memory (the key or hook label behind it), and the optional
// routes of newer stacks (proposals, history), which an older deployment answers with "No route".

import { all, api } from "../api.js";
import { may } from "../roles.js";

export async function optional(promise, fallback) {
  try {
    return await promise;
  } catch (error) {
    if (error.missingRoute) return fallback;
    throw error;
  }
}

// key_id / hook_id → label, for "who wrote it" (keys and hooks are listed to owners only).
export async function labels(mind) {
  const names = new Map();
  if (!may(mind, "manage")) return names;
  const mindId = mind.id;
  const [keys, hooks] = await Promise.all([
    all(`/minds/${mindId}/keys`, "keys", { limit: 100 }, 3).catch(() => []),
    all(`/minds/${mindId}/hooks`, "hooks", { limit: 100 }, 3).catch(() => []),
  ]);
  for (const key of keys) names.set(key.id, `key “${key.label || key.id}”`);
  for (const hook of hooks) names.set(hook.id, `hook “${hook.label || hook.id}”`);
  return names;
}

export function who(changedBy, names) {
  if (!changedBy) return "";
  if (changedBy.source === "user") return changedBy.user_id ? `person ${changedBy.user_id}` : "a person";
  const id = changedBy.key_id || changedBy.hook_id || changedBy.grant_id;
  if (id && names && names.has(id)) return `agent via ${names.get(id)}`;
  if (changedBy.grant_id) return `agent via app ${changedBy.grant_id}`;
  if (changedBy.hook_id) return `agent via hook ${changedBy.hook_id}`;
  if (changedBy.key_id) return `agent via key ${changedBy.key_id}`;
  return "an agent";
}

// The last change's author of each memory, from its history (newest revision), when the stack has it.
export async function authors(memories, names) {
  const found = new Map();
  await Promise.all(memories.map(async (memory) => {
    try {
      const answer = await api.get(`/memory/${encodeURIComponent(memory.id)}/history`, { query: { limit: 1 } });
      const latest = (answer.revisions || [])[0];
      if (latest) found.set(memory.id, who(latest.changed_by, names));
    } catch { /* history is optional: the card says "agent" or "user" instead */ }
  }));
  return found;
}

export const CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"];
export const PRIORITIES = ["critical", "high", "normal", "low"];

export function splitTags(text) {
  return String(text || "").split(",").map((t) => t.trim()).filter(Boolean);
}
