"""devstack.uvpip: uv gets the package sources pip is configured with (real `pip config`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.uvpip import pip_config, uv_flags


def test_pips_sources_become_uvs_flags_and_missing_paths_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels, constraints = tmp_path / "wheels", tmp_path / "constraints.txt"
    wheels.mkdir()
    constraints.write_text("torch<=2.14.1\n")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        f"find-links = {tmp_path / 'overridden'}\n"
        f"extra-index-url = file://{tmp_path / 'gone'} https://mirror.example/simple\n"
        f"constraint = {constraints}\n"
    )
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))  # the environment wins, as in pip
    config = pip_config()
    assert config["find-links"] == [str(wheels)]
    assert uv_flags(config) == [
        "--extra-index-url",
        "https://mirror.example/simple",
        "--find-links",
        str(wheels),
        "--constraints",
        str(constraints),
    ]
