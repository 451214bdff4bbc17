"""Local stack and shared dev tooling: template reader, moto fixes, local runner."""
