"""The one Logger, Tracer and Metrics of the service, created once per process."""

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "synapse"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(service=SERVICE, namespace="Synapse")
