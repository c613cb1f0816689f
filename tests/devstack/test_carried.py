"""tests/support/carried.py: every package a device module imports is there or travels."""

from __future__ import annotations

from devstack.carry import pack
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
    # docq.extract (issue 21) runs in the extract worker, and the device's workers.app
    # imports it: its parsers travel; tesserocr is excused as no profile carries OCR
    # (scans fail there as ocr_unavailable)
    entry = ("docq.extract", "docq.extract.pdf", "docq.extract.docx", "docq.extract.text")
    assert carried.unmet(entry=entry) == []
    found = carried.third_party_imports(entry)
    assert {"pypdfium2", "docx", "selectolax", "PIL", "tesserocr"} <= set(found)
    assert carried.unmet([p for p in pack.WHEELS if not p.startswith("pypdfium2")], entry) != []


def test_the_ocr_binding_is_excused_only_where_no_profile_carries_it() -> None:
    # no profile carries tesserocr (OCR's cost is measured on the CPU: bench.sizing scans);
    # OCR_ABSENT excuses it, and held to NOT_THERE alone its absence is named
    assert all("tesserocr" in carried.excused(wheels) for wheels in pack.PROFILES.values())
    assert "tesserocr" not in carried.excused([*pack.WHEELS, "tesserocr==2.13.0"])
    problems = carried.unmet(pack.WHEELS, ("docq.extract.ocr",), carried.NOT_THERE)
    assert problems == [
        "import tesserocr (docq.extract.ocr): tesserocr is neither on the device "
        "(device-packages.txt) nor carried (pack.PROFILES)"
    ]
