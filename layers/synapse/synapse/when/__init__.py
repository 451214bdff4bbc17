"""Reading time in text: a question's time expressions as a window of days (`questions`), and the
days a memory's content is about (`content`), both by one small grammar (`grammar`).

Standard library only, loaded only where time is read (search, recall with `q` or a coming-up list,
the indexer): never by the authorizer or a handler that does not read time (docs/time.md). Search's
cold start holds only the light modules, `window` (the days a window spans) and `words` (whether a
question may name a time at all); the grammar loads with the first question that may."""
