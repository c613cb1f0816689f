"""Where the checkout is: the defaults that point into it (the model repository, make up's
blobs) start from here."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
