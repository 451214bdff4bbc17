// A word-level diff (longest common subsequence) for "before → after" of a memory's content.

const MAX_TOKENS = 1500; // beyond this, show the two texts whole rather than an O(n·m) table

function tokens(text) {
  return String(text ?? "").split(/(\s+)/).filter((t) => t !== "");
}

export function diffWords(before, after) {
  const a = tokens(before);
  const b = tokens(after);
  if (a.length * b.length > MAX_TOKENS * MAX_TOKENS / 4) {
    return [{ op: "del", text: a.join("") }, { op: "ins", text: b.join("") }];
  }
  const table = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  const push = (op, text) => {
    const last = out[out.length - 1];
    if (last && last.op === op) last.text += text;
    else out.push({ op, text });
  };
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { push("same", a[i]); i += 1; j += 1; }
    else if (table[i + 1][j] >= table[i][j + 1]) { push("del", a[i]); i += 1; }
    else { push("ins", b[j]); j += 1; }
  }
  while (i < a.length) { push("del", a[i]); i += 1; }
  while (j < b.length) { push("ins", b[j]); j += 1; }
  return out;
}
