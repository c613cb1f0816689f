"""The README's configuration table covers every setting, with its real default; its file
walk-through uploads the sample files there are, with bodies its own commands build."""

from __future__ import annotations

import base64
import json
import re
import subprocess

from docq.config import REPO_ROOT, Settings
from docq.extract import sniff


def test_every_setting_is_documented_with_its_default() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    for name, field in Settings.model_fields.items():
        prefix = f"| `DOCQ_{name.upper()}` |"
        row = next((line for line in readme.splitlines() if line.startswith(prefix)), None)
        assert row is not None, f"DOCQ_{name.upper()} is missing from the README"
        if name != "model_repository" and field.default is not None:
            assert f"`{field.default}`" in row, f"README gives a stale default for {name}"
        assert field.description, f"{name} has no description saying what it trades"


def _walk_through_files_section() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    start = readme.index("### Uploading files: PDFs, scans, Word, HTML")
    return readme[start : readme.index("\n## ", start)]


def test_the_file_walk_through_uploads_every_sample_file_and_only_those() -> None:
    section = _walk_through_files_section()
    labels = json.loads((REPO_ROOT / "samples" / "files" / "labels.json").read_text())
    assert set(re.findall(r"files=@([\w.-]+)", section)) == set(labels)


def test_the_file_walk_through_json_body_carries_the_files_bytes() -> None:
    # Run the README's own commands up to the pipe into curl (no API needed for the body).
    section = _walk_through_files_section()
    block = re.search(r"```sh\n(pdf=\$\(base64.*?)\n```", section, re.S)
    assert block is not None, "the JSON upload example is gone"
    script = block.group(1).split("  | curl")[0].rstrip(" \\\n")
    run = subprocess.run(
        ["bash", "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    body = json.loads(run.stdout)
    assert body["model"] == "doc-type"
    for doc in body["documents"]:
        data = base64.b64decode(doc["content"], validate=True)
        assert data == (REPO_ROOT / "samples" / "files" / doc["id"]).read_bytes()
        assert sniff(data) == doc["content_type"]
