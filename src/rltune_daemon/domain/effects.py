"""How placement slows jobs down. The simulator applies it to run times and the placement and planner
weigh it when they choose nodes, so it sits in the domain, below all three. The numbers are documented
in docs/simulator.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EffectsConfig:
    """How placement changes run time (``pure()`` switches it off).

    A job that starts on a node already running another job runs ``1 + colocation`` times longer
    (host-side contention: PCIe, CPU, memory bandwidth, I/O). A multi-node job that shares nodes also
    pays ``cross_node`` per extra node: gang-synchronised training moves at the pace of its slowest
    worker, and each shared node is another chance of a straggler. The factor is fixed at start.
    """

    colocation: float = 0.10
    cross_node: float = 0.05

    @staticmethod
    def pure() -> EffectsConfig:
        return EffectsConfig(0.0, 0.0)

    def factor(self, shared: bool, n_nodes: int) -> float:
        if not shared:
            return 1.0
        return 1.0 + self.colocation + self.cross_node * max(n_nodes - 1, 0)
