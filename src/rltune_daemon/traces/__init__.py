"""Workloads (jobs + the cluster they run on): bundled real traces, fitted generators and user files.

``load_workload("philly")``, ``load_workload("jobs.swf")``, ... always return a ``Workload`` whose jobs
are sorted by submit time (seconds from the first submit), have unique ids, a runtime and a time limit
no shorter than it, and can all run on the workload's cluster (the others are dropped and counted in
``Workload.meta["dropped"]``). See docs/traces.md.
"""

from rltune_daemon.traces.estimates import apply_estimates
from rltune_daemon.traces.registry import TRACE_NAMES, load_workload
from rltune_daemon.traces.split import split_by_time
from rltune_daemon.traces.stats import trace_stats

__all__ = ["TRACE_NAMES", "apply_estimates", "load_workload", "split_by_time", "trace_stats"]
