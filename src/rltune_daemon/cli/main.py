"""``rltune``: offline tools (traces, evaluation, training, benchmarks).

Each sub-command lives in its own ``*_cmd`` module exposing ``register(subparsers)``; the module sets
``func`` on its parser, which takes the parsed namespace and returns an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

from rltune_daemon.errors import run_guarded

COMMAND_MODULES = (
    "rltune_daemon.cli.trace_cmd",
    "rltune_daemon.cli.evaluate_cmd",
    "rltune_daemon.cli.compare_cmd",
    "rltune_daemon.cli.bench_cmd",
    "rltune_daemon.cli.train_cmd",
    "rltune_daemon.cli.heldout_cmd",
    "rltune_daemon.cli.replay_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rltune", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # sub-command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv  # commands record how they were called next to their results
    func = cast(Callable[[argparse.Namespace], int], args.func)
    return run_guarded(lambda: func(args))


if __name__ == "__main__":
    sys.exit(main())
