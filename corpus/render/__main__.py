"""Write rendered documents: `python -m corpus.render samples|scans|files ...`.

python -m corpus.render samples                      # samples/files/, as committed
python -m corpus.render scans --n 100 --dpi 300 --format png --out /tmp/scans
python -m corpus.render files --n 12 --form docx --out /tmp/docx
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from corpus.render import files
from corpus.render.scan import FORMATS

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "samples" / "files"
BORN_DIGITAL = ("text", "html", "pdf", "docx")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m corpus.render", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("samples", help="the README walk-through's sample files")
    s.add_argument("--out", type=Path, default=SAMPLES_DIR)
    s.add_argument("--seed", type=int, default=files.SAMPLES_SEED)
    for name, helptext in (("scans", "scanned pages (A4, no text layer)"),
                           ("files", "born-digital files")):  # fmt: skip
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--n", type=int, required=True, help="number of documents")
        p.add_argument("--seed", type=int, default=7, help="same seed, same documents")
        p.add_argument("--out", type=Path, required=True)
        if name == "scans":
            p.add_argument("--dpi", type=int, default=300)
            p.add_argument("--format", choices=FORMATS, default="png")
            p.add_argument("--bilevel", action="store_true", help="black and white (fax mode)")
            p.add_argument("--processes", type=int, default=1, help="render in parallel")
        else:
            p.add_argument("--form", choices=BORN_DIGITAL, default="pdf")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.command == "samples":
        labels = files.samples(args.out, args.seed)
    elif args.command == "scans":
        form = files.scan_form(args.format, args.dpi, args.bilevel)
        labels = files.scans(args.out, args.n, args.seed, form, args.processes)
    else:
        ext = {"text": "txt", "html": "html", "pdf": "pdf", "docx": "docx"}[args.form]
        labels = files.write(
            args.out,
            [(d.id, d, files.Form(args.form, ext)) for d in files.generate(args.n, args.seed)],
        )
    took = time.perf_counter() - start
    print(f"wrote {len(labels)} files and labels.json to {args.out} in {took:.1f} s")


if __name__ == "__main__":
    main()
