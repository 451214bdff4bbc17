"""Local stack and shared dev tooling: template reader, moto fixes, local runner."""

import os


def local_endpoint_credentials() -> None:
    """A command against SYNAPSE_DYNAMODB_ENDPOINT (moto, DynamoDB Local) takes any credentials, but
    botocore still wants some: set placeholders unless the environment has its own."""
    if os.environ.get("SYNAPSE_DYNAMODB_ENDPOINT"):
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            os.environ.setdefault(name, "local")
