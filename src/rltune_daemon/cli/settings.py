"""Settings files for ``rltune train --config`` and ``rltune evaluate --config``.

The command line names what a run is about (the trace, the policies, where the results go); a TOML file
holds the knobs that tune how it runs, under the names the run records them by (a model manifest's
``hyperparameters``, a results.json's ``config``), so a recorded setting reads the same in both. Each
setting has one place: a key the command line takes is refused in the file, naming its flag. A bad key
or value is one line naming it, before any work.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from rltune_daemon.errors import UserError
from rltune_daemon.service.config import read_toml


def field_hints(cls: Any, skip: Collection[str], **override: Any) -> dict[str, Any]:
    """The dataclass ``cls``'s fields and their types, but those in ``skip`` (what the command line
    sets, or what is no setting); ``override`` gives a field another type than its own."""
    hints = {**typing.get_type_hints(cls), **override}
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name not in skip}


def read_settings(path: Path, hints: Mapping[str, Any], flags: Mapping[str, str]) -> dict[str, Any]:
    """The settings in the TOML file ``path``, each checked against its type in ``hints`` (``int``,
    ``float``, ``str``, ``bool``, ``Path``, ``dict[str, str]``, or a union of them: the first that
    fits). ``flags`` maps the settings the command line takes to their flags."""
    out = {}
    for key, value in read_toml(path).items():
        if key in flags:
            raise UserError(f"{path}: {key} is set on the command line ({flags[key]}), not in a config file")
        if key not in hints:
            raise UserError(f"{path}: unknown key {key!r} (valid keys: {', '.join(sorted(hints))})")
        out[key] = _typed(path, key, value, hints[key])
    return out


def _typed(path: Path, key: str, value: Any, hint: Any) -> Any:
    """``value`` as ``hint`` says, or a one-line error. TOML has no null, so ``X | None`` reads as X."""
    if get_origin(hint) in (Union, types.UnionType):
        options = [h for h in get_args(hint) if h is not type(None)]
        for option in options:
            try:
                return _typed(path, key, value, option)
            except UserError:
                continue
        return _typed(path, key, value, options[0])  # the first type's error
    if get_origin(hint) is dict:
        if not isinstance(value, dict) or not all(_scalar(v) for v in value.values()):
            raise UserError(f"{path}: {key} = {value!r}: expected a table of KEY = VALUE, e.g. [{key}]")
        return {str(k): str(v) for k, v in value.items()}  # trace options are text, as --opt gives them
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = _scalar(value) and not isinstance(value, str)
        value = float(value) if ok else value
    elif hint in (str, Path):
        ok = isinstance(value, str)
        value = hint(value) if ok else value
    else:
        raise TypeError(f"no TOML reading for {hint!r}")
    if not ok:
        raise UserError(f"{path}: {key} = {value!r}: expected {_name(hint)}")
    return value


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _name(hint: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
            Path: "a path (a string)"}[hint]
