"""``rltune site``: what the daemon would do on *this* cluster, judged on its own history against its own
Slurm (``run.run_site``), after checking that the simulator reproduces that Slurm (``selfcheck``)."""
