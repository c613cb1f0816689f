"""The chaos run (issue 22): docq's processes killed at random under a job, and the counts
that say nothing was lost, duplicated or relabelled (`python -m bench.chaos --help`)."""
