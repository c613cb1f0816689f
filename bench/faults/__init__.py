"""The fleet's repeatable run (issue 41): `python -m bench.fleet --seconds 300 --seed N`."""
