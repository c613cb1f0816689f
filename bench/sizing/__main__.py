"""`python -m bench.sizing`: the sizing tools' command line (bench/sizing/__init__.py)."""

from bench.sizing import main

main()
