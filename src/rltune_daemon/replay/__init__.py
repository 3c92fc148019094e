"""``rltune replay``: a trace window run on a real Slurm in compressed time, next to the simulator.

Modules: ``scaling`` (time-scaled slurm.conf parameters, limits and job scripts), ``window`` (the trace
window both sides run), ``cluster`` (the private local cluster or an admin's existing one), ``submit``
(timed ``sbatch``), ``collect`` (per-job times from Slurm), ``daemon_arm`` (the real daemon with a
compressed cycle), ``simulate`` (the simulator's counterpart), ``fidelity`` (sim vs real),
``report`` (results.json/md and plots), ``run`` (one replay, every seed and arm).
"""
