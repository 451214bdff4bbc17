"""What can go wrong loading the embedding model: both mean "no semantic side", never a wrong one."""


class EmbeddingError(RuntimeError):
    """The embedder cannot run."""


class ModelUnavailable(EmbeddingError):
    """The model package (or its file) is not installed where this process runs."""


class ModelIntegrityError(EmbeddingError):
    """A model or vocabulary file's sha256 is not the pinned one: it is refused, not used."""
