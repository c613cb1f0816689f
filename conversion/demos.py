"""Build both demo models in one process: `python -m conversion.demos [--train]`.

`make model` and `make train` run this rather than `conversion.demo` and
`conversion.demo_lang` one after the other: a fresh virtualenv has no bytecode yet
(`PYTHONDONTWRITEBYTECODE` keeps it so), and importing torch, transformers and ONNX Runtime
from source takes about 20 s on two cores, once here instead of twice. Each build seeds
and fixes its threads itself, so each writes the bytes it writes alone. Options
(`--train`, `--repository`, `--heads`) go to both.
"""

from __future__ import annotations

import sys

from conversion import demo, demo_lang


def main(argv: list[str]) -> None:
    if any(arg.startswith("--build-dir") for arg in argv):
        sys.exit("conversion.demos: each model keeps its own --build-dir; build one alone for that")
    demo.main(argv)
    demo_lang.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
