"""The environment every benchmark runs with: fake AWS credentials, its own table names, tracing off."""

from __future__ import annotations

BENCH_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "SYNAPSE_MEMORIES_TABLE": "bench-memories",
    "SYNAPSE_MINDS_TABLE": "bench-minds",
    "SYNAPSE_JWT_SECRET": "bench-jwt-secret-0123456789abcdef0123456789",
    "SYNAPSE_KEY_PEPPER": "bench-pepper-0123456789abcdef0123456789",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "synapse",
    "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
}
