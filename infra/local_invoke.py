"""A local stand-in for Lambda's asynchronous invoke of the purge function.

DELETE /minds/{mind_id} hands a mind's purge to `PurgeMindFunction` (InvocationType Event) and
answers at once; here the runner installs a starter into the layer (`synapse.lifecycle.purges`)
that runs the same handler file, named by template.yaml, on one background thread. Like Lambda it
tries a failing purge again (twice, `RETRIES`) and then logs it; unlike Lambda it does not outlive
the runner: a purge cut short by a stop is started again by an owner's repeated DELETE.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from infra import template
from infra.gateway import LambdaContext, load_handler

log = logging.getLogger("synapse.local_invoke")

PURGE_FUNCTION = "PurgeMindFunction"
RETRIES = 2


def purge_function() -> tuple[Path, str]:
    resource = template.resources("AWS::Serverless::Function")[PURGE_FUNCTION]
    return template.ROOT / resource["Properties"]["CodeUri"], template.handler_of(resource)


def start(stop: threading.Event) -> threading.Thread:
    """Install the starter; purges run one at a time, in the order asked, until `stop`. The thread
    returned ends with `stop`, dropping purges not begun (an owner's repeated DELETE restarts them)."""
    from synapse.lifecycle import purges

    code_dir, handler_name = purge_function()
    handler = load_handler(code_dir, handler_name)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synapse-purge")

    def run(mind_id: str) -> None:
        event: dict[str, Any] = purges.event_for(mind_id)
        for attempt in range(RETRIES + 1):
            if stop.is_set():
                return
            try:
                handler(event, LambdaContext(function_name="purge_mind"))
                return
            except Exception:
                log.exception("purge of %s failed (attempt %d of %d)", mind_id, attempt + 1, RETRIES + 1)

    def starter(mind_id: str) -> None:
        pool.submit(run, mind_id)

    purges.install(starter)

    def close_on_stop() -> None:
        stop.wait()
        pool.shutdown(wait=False, cancel_futures=True)

    thread = threading.Thread(target=close_on_stop, name="synapse-purge-stop", daemon=True)
    thread.start()
    return thread
