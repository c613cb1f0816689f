"""Carrying docq to a GPU host that reaches no registry: what a call there lacks, packed
here at the lock's versions (pack.py), unpacked there (remote.sh), and checkpoints too large
for one call cut into parts (parts.py). Environment tooling, like devstack/lock.py: the GPU
tests, the GPU benches and the parity gate all travel this way (README, "Tests";
docs/performance.md)."""
