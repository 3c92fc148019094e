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

# Libraries of the `train` extra: `pip install .` installs the daemon without them, so an offline command
# that needs one says how to install it instead of failing with a traceback.
TRAIN_EXTRAS = frozenset({"gymnasium", "matplotlib", "tqdm", "submitit"})
TRAIN_EXTRAS_INSTALL = 'pip install "rltune-daemon[train]"'

# Imported by name, one at a time: a command whose module needs a library of the train extra that is
# not installed is still listed and answers with the install line, while the others work.
COMMAND_MODULES = (
    "rltune_daemon.cli.trace_cmd",
    "rltune_daemon.cli.evaluate_cmd",
    "rltune_daemon.cli.compare_cmd",
    "rltune_daemon.bench.command",
    "rltune_daemon.cli.train_cmd",
    "rltune_daemon.cli.heldout_cmd",
    "rltune_daemon.cli.replay_cmd",
    "rltune_daemon.cli.site_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rltune", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
            module.register(sub)  # registering may import more (defaults shown in --help)
        except ModuleNotFoundError as exc:
            if _extra(exc) is None:
                raise
            # the command needs a training library to build its options: keep the command (so it is
            # listed and answers with the install line) without them
            command = name.rsplit(".", 1)[-1].removesuffix("_cmd")
            stub = sub.add_parser(command, add_help=False, help=f"(needs {TRAIN_EXTRAS_INSTALL})")
            stub.set_defaults(missing_extra=exc)
    return parser


def _extra(exc: ModuleNotFoundError) -> str | None:
    """The training library ``exc`` says is missing, or None when it is about anything else."""
    top = (exc.name or "").partition(".")[0]
    return top if top in TRAIN_EXTRAS else None


def _needs_extras(command: str, exc: ModuleNotFoundError) -> int:
    print(f"error: rltune {command} needs the training extras (no module {_extra(exc)}): "
          f"{TRAIN_EXTRAS_INSTALL}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # parse_args is parse_known_args plus this error; a stub command (above) takes no options, so its
    # own arguments must not stop it from saying what to install
    args, unknown = parser.parse_known_args(argv)
    missing = cast(ModuleNotFoundError | None, getattr(args, "missing_extra", None))
    if missing is not None:
        return _needs_extras(args.command, missing)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.argv = argv  # commands record how they were called next to their results
    func = cast(Callable[[argparse.Namespace], int], args.func)

    def run() -> int:
        try:
            return func(args)
        except ModuleNotFoundError as exc:  # a training library imported where the command needs it
            if _extra(exc) is None:
                raise
            return _needs_extras(args.command, exc)

    return run_guarded(run)


if __name__ == "__main__":
    sys.exit(main())
