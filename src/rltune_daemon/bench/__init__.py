"""Benchmarks of the daemon and the simulator (``rltune bench``): timings reported as JSON and plots,
never asserted by tests; compare ratios within one run."""
