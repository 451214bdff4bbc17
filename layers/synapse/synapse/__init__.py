"""Synapse shared layer: the memory model, store, auth and HTTP glue every function imports."""
