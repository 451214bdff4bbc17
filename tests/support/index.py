"""A temp folder as the search index root (in place of EFS), for the search and indexer tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.settings import Configure


@pytest.fixture(name="index_root")
def index_root_fixture(configure: Configure, tmp_path: Path) -> Path:
    root = tmp_path / "index"
    configure(SYNAPSE_INDEX_DIR=str(root))
    return root
