"""Calling docq: the Python client (sdk.py) and the `docq` command line (cli.py)."""
