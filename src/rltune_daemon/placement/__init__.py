"""Placement: where a job's GPUs go. ``shapes`` says what a job needs per node, ``allocate`` finds
pack/spread allocations on a cluster state, ``milp`` chooses among them for the top-K jobs."""
