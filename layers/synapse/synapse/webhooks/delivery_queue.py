"""The queue between producers and the delivery function: SQS in AWS, with a dead-letter queue.

Producers send one message per (subscription, event); the delivery function sends a message again,
delayed, to retry it. SQS delays stop at 15 minutes (`SQS_MAX_DELAY_SECONDS`). The local runner and
tests install an in-process stand-in with the same semantics (`install`, see `infra/local_queue.py`).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Protocol

import boto3

from synapse.core.settings import get_settings

SQS_MAX_DELAY_SECONDS = 900


class Queue(Protocol):
    def send(self, body: str, delay_seconds: int) -> None: ...

    def dead_letter(self, body: str) -> None: ...


class SqsQueue:
    """The delivery queue and its dead-letter queue in AWS."""

    def __init__(self, queue_url: str, dead_letter_url: str) -> None:
        self.queue_url = queue_url
        self.dead_letter_url = dead_letter_url

    @staticmethod
    @cache
    def _client() -> Any:
        return boto3.client("sqs", region_name=get_settings().region)

    def send(self, body: str, delay_seconds: int) -> None:
        if not self.queue_url:
            raise RuntimeError("SYNAPSE_WEBHOOK_QUEUE_URL is not set and no local queue is installed")
        delay = max(0, min(SQS_MAX_DELAY_SECONDS, delay_seconds))
        self._client().send_message(QueueUrl=self.queue_url, MessageBody=body, DelaySeconds=delay)

    def dead_letter(self, body: str) -> None:
        self._client().send_message(QueueUrl=self.dead_letter_url or self.queue_url, MessageBody=body)


_installed: Queue | None = None


def install(queue: Queue | None) -> None:
    """Use an in-process queue instead of SQS (the local runner and tests); None goes back to SQS."""
    global _installed
    _installed = queue


def current() -> Queue:
    """The installed queue, else SQS as the settings name it."""
    if _installed is not None:
        return _installed
    settings = get_settings()
    return SqsQueue(settings.webhook_queue_url, settings.webhook_dead_letter_url)
