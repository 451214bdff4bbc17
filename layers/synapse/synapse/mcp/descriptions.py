"""What an agent reads of Synapse's MCP tools: the server's instructions and each tool's
description, in the words `schema`'s tool table gives them (kept apart from the table's rules)."""

INSTRUCTIONS = """\
Synapse is your long-term memory about the user and their work, shared across sessions and agents.
At the start of each turn, call `recall` with the user's message as `query` (or read the
synapse://recall resource) to load what is known, the most relevant first.
When you learn something worth keeping — who the user is, what they prefer, facts, project state,
skills, mistakes to avoid — call `remember`: `content` alone is enough; give a category and a stable
snake_case key when you have them, so that a later update replaces the memory instead of duplicating
it. Use `search` to find something specific (the user's question as-is works) and `fetch` to read one
hit in full, `forget` when a memory is wrong or no longer true, `list_expiring` to see short-lived
context about to lapse."""

REMEMBER = """\
Store one memory in the user's Synapse mind. Only `content` is required: without a category it is a
note, and without a key one is derived from the content, so storing the same text twice keeps one
memory. Storing again with the same category and key REPLACES that memory (same id, version + 1),
so reuse stable keys: `home_city`, `preferred_editor`, `project_atlas_status` — lowercase
snake_case, no dates or counters in keys.

Categories: identity (who the user is: name, role, languages), preference (how they like things
done), fact (durable facts about their world), project (state and decisions of ongoing work),
skill (how to do something in their environment), mistake (what went wrong, to avoid repeating),
context (short-lived situational context: current task, today's plan — give it expires_at),
note (anything else).

Priority: critical (always needed), high, normal (default), low. Confidence: 0-1 (how sure you
are; agents default to 0.7). expires_at: a future ISO 8601 timestamp with a time zone such as
2030-06-30T18:00:00Z (a past one is refused) — set it for session or task context so it drops out
of recall by itself. occurred_at: when the event happened or will happen, or when the user said it,
if that is not now — a date (2026-12-09) or a timestamp with a time zone; recall shows it and
after/before on the reads select by it.
Returns the stored memory (its id, version, verified flag, updated_at). An agent's write to a memory
a person verified may come back as a proposal awaiting their review. When the mind already holds
memories this one may replace, the answer lists them in `similar`, each with its text (relation
`repeat`: says the same; `related`: the same subject, perhaps an older value: a guess, so read it)
and says what to do. When a new fact replaces an older one ("now works at Globex" after "works at
Acme"), pass the older memory's id in `supersedes`: it is kept, marked replaced, and drops out of
recall and search."""

REMEMBER_MANY = """\
Store up to 100 memories at once, each exactly as `remember` stores one (content alone works).
Each item succeeds or fails on its own: the answer has one result per item, in order (created,
replaced, proposed or error with Synapse's message), and a summary."""

RECALL = """\
Load the plain-text summary of what Synapse remembers about the user. Call it at the start of each
turn with the user's message as `query`: the memories most relevant to it come right after the
critical ones, then the rest by priority (critical, high, normal, low); expired memories left out,
verified ones marked, an entry's event date on an `On:` line. Narrow it with category (one or more),
tag, or a time window (after/before: dates or timestamps, on each memory's occurred_at, else when it
was stored); max_chars (500-400000) bounds the text's size. What is coming up in the next 7 days is
listed too: pass tz (the user's time zone) so that today is the user's today."""

SEARCH = """\
Search the user's memories, best match first. Pass the user's question as-is ("What coffee does
he drink?") or keywords; exact syntax also works: "a phrase", prefix*, AND, OR, NOT, +required.
Questions match by meaning too ("who is his partner?" finds "Wife is Anna"). Each of the `results`
has a snippet of its content (matches in **bold**), `relevance` (strong: an answer to act on; weak:
related at best), `score`, `matched` (which of the query's `terms` it matched), `coverage` (0-1,
their share), `similarity` and `updated_at`. If no hit is strong, a weak match at best, the memories
most likely do not hold the answer: say "I don't know" rather than guess. Strong means about
what was asked, not that it holds the answer: answer only from what a hit says ("How old is
Erik?" can find memories of Erik that never give his age). Of two hits saying
nearly the same, the newer (the current fact) comes first. Filter by tag or category, or by time
with after/before (dates or timestamps, on occurred_at, else when stored: "what did we discuss this
week?"); mode=lexical for words only. Time words in the question ("next week", "on Friday") favour
the memories dated then, counted from now in tz (the user's time zone; UTC if left out). A memory
stored a moment ago may take a few seconds to become searchable. Read a hit in full with `fetch`."""

FETCH = """\
Read one memory in full by its id (mem_…, as `search`, `by_tag` or `remember` return it): its
content, category, key, tags, priority, confidence, version, verified flag and expiry."""

BY_TAG = """\
The memories carrying a tag (case-insensitive), most important first. Narrow by category; expired
memories are left out unless include_expired is true. Pass next_cursor back as cursor for more."""

UPDATE = """\
Change some fields of one memory by its id; fields left out stay as they are, expires_at null
clears the expiry, occurred_at null clears the event time. To replace a memory whose category and
key you know, `remember` works too. An agent's change to a memory a person verified comes back as a
proposal awaiting their review. `supersedes` marks other memories (ids) as replaced by this one."""

FORGET = """\
Delete a memory: by its id, or by category and key. Use it when a memory is wrong, no longer true,
or the user asks you to forget it. To correct a memory, prefer `remember` with the same category
and key. Deleting a memory a person verified is proposed to them instead."""

LIST_EXPIRING = """\
Memories whose expires_at falls within the coming window (soonest first): short-lived context about
to drop out of recall. Renew one with `remember` (same category and key, a later expires_at) if it
still matters. within: a whole number with m, h, d or w (30m, 24h, 7d, 2w); at most 365d."""

HISTORY = """\
Every revision of one memory, newest first (a deleted memory's too, for 30 days): what it said,
when, and who changed it. Use it to see how a memory came to say what it says."""

SEARCH_QUERY = (
    "The user's question as-is, or keywords. Each hit's `relevance` says whether it answers it "
    "(strong) or is related at best (weak)."
)
