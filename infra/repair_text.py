"""Rewrite minds written before every door refused lone UTF-16 surrogates (issue 32):
`python -m infra.repair_text <mind_id> [<mind_id> …]` (`synapse.lifecycle.text_repair`).

Reads already show such text with U+FFFD; this moves the items keyed by it (a tag's copies and
counters) so later changes of the memory leave nothing behind. Run it while the minds are quiet.
Locally it reads the table at SYNAPSE_DYNAMODB_ENDPOINT (DynamoDB Local, or the endpoint a running
`make run` prints); in AWS, run it with credentials for the deployment's Memories table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "layers" / "synapse") not in sys.path:
    sys.path.insert(0, str(ROOT / "layers" / "synapse"))

from synapse.lifecycle import text_repair  # noqa: E402

from infra import local_endpoint_credentials  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    local_endpoint_credentials()
    parser = argparse.ArgumentParser(prog="python -m infra.repair_text", description=__doc__.split("\n")[0])
    parser.add_argument("mind_ids", nargs="+", metavar="mind_id")
    args = parser.parse_args(argv)
    for mind_id in args.mind_ids:
        print(f"{mind_id}: {text_repair.repair_mind(mind_id)} items rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
