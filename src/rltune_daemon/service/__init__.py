"""The live daemon on top of the decision core (``core``): read Slurm, run the one cycle, apply reversibly.

Modules: ``config`` (TOML + environment), ``loop`` (the process: the cycle's observer, queue checks,
restore, shutdown), ``statefile`` (the undo record's journal), ``backends`` (the Slurm CLI backend; the
simulated one is ``sim.backend``), ``policy`` (learned model with a loud fallback), ``metrics``
(Prometheus), ``notify`` (systemd sd_notify), ``logging`` (structlog), ``dryrun`` (the table), ``probe``.
"""
