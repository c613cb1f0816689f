"""What `bench.gpu.pack --profile scans` adds to .devpack/ for bench.gpu.scans: the OCR
binding (SCANS_WHEELS, packed with the others into site.tar.xz), Tesseract's English data
(tessdata/ in the same archive) and the scanned pages themselves (scans/), rendered here:
the device has no fpdf2 to render them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# `--profile scans` (bench.gpu.scans: scanned pages through the extract workers' OCR): the
# binding, whose wheel carries libtesseract and leptonica (it needs only libz, libstdc++
# and libc), and Debian's English data for it, the package `make system` installs here.
SCANS_WHEELS = ["tesserocr==2.13.0"]
TESSDATA_DEB = "tesseract-ocr-eng"
# The scans carried: about 44 KB each (1.3 pages: receipts one short page, some documents
# two or three A4 pages), so 60 take 2.5 MiB (100 no longer fit once doc-type's head carried
# its last layer: the tree grew 3.2 MiB); bench.gpu.scans uploads each several times.
SCANS = {"n": 60, "seed": 7}


def tessdata(dest: Path, package: str = TESSDATA_DEB) -> Path:
    """`dest`/tessdata holding the *.traineddata of Debian's `package` (apt-get download)."""
    out = dest / "tessdata"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True)
        (deb,) = Path(tmp).glob("*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), f"{tmp}/x"], check=True)
        for data in Path(tmp, "x").rglob("*.traineddata"):
            shutil.copy(data, out / data.name)
    if not any(out.glob("*.traineddata")):
        raise RuntimeError(f"{package} holds no *.traineddata")
    return out


def render_scans(dest: Path, n: int, seed: int) -> Path:
    """`dest`/scans: `n` 300 dpi black-and-white TIFF scans and labels.json (corpus.render),
    kept when a folder of the same `n` and `seed` is there already."""
    out = dest / "scans"
    stamp = {"n": n, "seed": seed, "dpi": 300, "format": "tiff", "bilevel": True}
    done = out / "SCANS.json"
    if done.exists() and json.loads(done.read_text()) == stamp:
        return out
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "corpus.render", "scans", "--n", str(n), "--seed", str(seed)]
    cmd += ["--dpi", "300", "--format", "tiff", "--bilevel", "--out", str(out)]
    subprocess.run([*cmd, "--processes", str(os.cpu_count() or 1)], cwd=REPO, check=True)
    done.write_text(json.dumps(stamp) + "\n")
    return out
