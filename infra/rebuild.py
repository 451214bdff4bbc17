"""Rebuild minds' search indexes from DynamoDB: `python -m infra.rebuild <mind_id> [<mind_id> …]`;
`python -m infra.rebuild --sweep` removes the indexes of minds that no longer exist.

Locally it reads the table at SYNAPSE_DYNAMODB_ENDPOINT (DynamoDB Local, or the embedded moto
server whose endpoint a running `make run` prints) and writes under SYNAPSE_INDEX_DIR (default
`<SYNAPSE_DATA_DIR>/index`). In AWS, invoke the RebuildIndexFunction
with {"mind_id": "..."} instead: only it can reach the EFS file system.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "layers" / "synapse") not in sys.path:
    sys.path.insert(0, str(ROOT / "layers" / "synapse"))

from synapse.index import generations, orphans, rebuild  # noqa: E402
from synapse.index.documents import Unindexable  # noqa: E402

from infra import local_endpoint_credentials  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    local_endpoint_credentials()
    parser = argparse.ArgumentParser(prog="python -m infra.rebuild", description=__doc__.split("\n")[0])
    parser.add_argument("mind_ids", nargs="*", metavar="mind_id")
    parser.add_argument("--sweep", action="store_true", help="remove the indexes of minds that are gone")
    args = parser.parse_args(argv)
    if args.sweep:
        swept = orphans.sweep()
        print(f"removed the indexes of {len(swept.removed)} deleted minds: {' '.join(swept.removed) or '-'}")
    elif not args.mind_ids:
        parser.error("give mind ids to rebuild, or --sweep")
    failed = 0
    for mind_id in args.mind_ids:
        try:
            if not orphans.mind_exists(mind_id):
                removed = orphans.remove_mind(mind_id)
                print(f"{mind_id}: no such mind{' (its index files were removed)' if removed else ''}")
                failed += 1
                continue
            rebuilt = rebuild.rebuild(mind_id)
        except Unindexable as error:
            print(f"{mind_id}: {error}", file=sys.stderr)
            failed += 1
            continue
        generation = rebuilt.generation.name if rebuilt.generation else "-"
        print(
            f"{mind_id}: {rebuilt.indexed} memories indexed, {rebuilt.carried_over} newer changes kept,"
            f" published {generation} in {generations.mind_dir(mind_id)}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
