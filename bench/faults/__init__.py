"""The fault runs (issues 22 and 41): one client, one checker, at two scales, chaos (one
host, processes SIGKILLed) and fleet (nine hosts, network faults): `python -m bench.faults
--help`."""
