"""The OpenAPI document, generated from the code at build time (`make openapi`): not part of the
built layer, which is why pydantic (the answer models) is not a runtime dependency."""
