"""tests/support/carried.py: every package a device module imports is there or travels."""

from __future__ import annotations

from bench.gpu import pack
from tests.support import carried


def test_every_import_of_what_the_device_runs_is_there_or_carried() -> None:
    assert carried.unmet() == []


def test_a_wheel_left_out_is_named_with_who_imports_it_and_who_requires_it() -> None:
    # the regression issue 19 found: the API's docs assets, and a dependency of a carried wheel
    wheels = [p for p in pack.WHEELS if not p.startswith(("swagger-ui-bundle", "kombu"))]
    problems = "\n".join(carried.unmet(wheels))
    assert "import swagger_ui_bundle (api.docs)" in problems
    assert "import kombu (" in problems
    assert "celery==5.7.0 requires kombu" in problems


def test_lazy_imports_inside_functions_are_followed() -> None:
    # serving.server imports pytriton inside a function; conversion.convert imports
    # openvino lazily: both are found (and excused in NOT_THERE with a reason)
    found = carried.third_party_imports(("serving.server", "conversion.convert"))
    assert {"pytriton", "openvino"} <= set(found)
    assert set(carried.NOT_THERE) >= {"pytriton", "openvino", "tensorrt"}


def test_the_extract_workers_readers_are_there_or_carried() -> None:
    # docq.extract (issue 21) runs in the extract worker, which bench.gpu.pipeline starts
    # there once workers/ calls extract_isolated: its parsers travel; tesserocr is excused
    # where the profile carries no OCR (the text profile: scans fail as ocr_unavailable)
    entry = ("docq.extract", "docq.extract.pdf", "docq.extract.docx", "docq.extract.text")
    assert carried.unmet(entry=entry) == []
    found = carried.third_party_imports(entry)
    assert {"pypdfium2", "docx", "selectolax", "PIL", "tesserocr"} <= set(found)
    assert carried.unmet([p for p in pack.WHEELS if not p.startswith("pypdfium2")], entry) != []


def test_the_scans_profile_carries_ocr_and_nothing_excuses_it_there() -> None:
    # bench.gpu.scans (issue 21): the extract workers OCR on the device, so there tesserocr
    # must travel, and the reason the text profile gives for its absence no longer holds
    assert carried.unmet(pack.PROFILES["scans"]) == []
    assert "tesserocr" in carried.excused(pack.PROFILES["text"])
    assert "tesserocr" not in carried.excused(pack.PROFILES["scans"])
    assert "bench.gpu.scans" in carried.third_party_imports()["httpx"]
    # held to the scans profile's excuses, a list that lost the binding is named
    entry = ("docq.extract.ocr",)
    assert carried.unmet(pack.PROFILES["scans"], entry, carried.NOT_THERE) == []
    lost = [p for p in pack.PROFILES["scans"] if not p.startswith("tesserocr")]
    problems = carried.unmet(lost, entry, carried.NOT_THERE)
    assert problems == [
        "import tesserocr (docq.extract.ocr): tesserocr is neither on the device "
        "(device-packages.txt) nor carried (pack.PROFILES)"
    ]
