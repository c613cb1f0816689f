"""docq as a fleet on one machine (issue 41): each host a Linux network namespace with an
address of its own on a shared bridge, running the local stack's processes (devstack/stack.py)
bound to that address, nothing on loopback; `python -m devstack.fleet up` / `down`
(docs/fleet.md). net.py makes the hosts and cuts their links, hosts.py says what runs where,
fleet.py starts, kills and restarts it, nemesis.py is the faults a test applies and heals."""
