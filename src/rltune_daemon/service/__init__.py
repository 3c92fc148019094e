"""The daemon: read Slurm (or the simulator), plan with the shared planner, apply reversibly.

Modules: ``config`` (TOML + environment), ``loop`` (the cycle), ``applier`` (Plan -> job updates,
restore), ``statefile`` (durable record of every change), ``backends`` / ``simbackend`` (where
snapshots come from and updates go), ``policy`` (learned model with a loud fallback), ``metrics``
(Prometheus), ``notify`` (systemd sd_notify), ``logging`` (structlog), ``dryrun`` (the table).
"""
