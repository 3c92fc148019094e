"""The daemon's decision core: one cycle (read -> confirm -> learn history -> steer -> begin/apply/settle),
the applier that turns a Plan into reversible updates, and the undo record. No Slurm, no simulator, no
I/O of its own: the live service and the simulator's daemon mode plug their cluster and observers in."""
