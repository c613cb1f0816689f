"""The README's configuration table covers every setting, with its real default."""

from __future__ import annotations

from docq.config import REPO_ROOT, Settings


def test_every_setting_is_documented_with_its_default() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for name, field in Settings.model_fields.items():
        prefix = f"| `DOCQ_{name.upper()}` |"
        row = next((line for line in readme.splitlines() if line.startswith(prefix)), None)
        assert row is not None, f"DOCQ_{name.upper()} is missing from the README"
        if name != "model_repository" and field.default is not None:
            assert f"`{field.default}`" in row, f"README gives a stale default for {name}"
        assert field.description, f"{name} has no description saying what it trades"
