"""Reading bundled data (``rltune_daemon/data``) and user files, compressed or not.

Bundled files are read through ``importlib.resources`` so the package works from a wheel or a zip.
User files may be plain or ``.xz``/``.gz``/``.bz2``; a missing file is one ``UserError`` line, a corrupt
compressed one an ``InputFileError``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import zlib
from importlib import resources
from pathlib import Path

from rltune_daemon.errors import InputFileError, UserError

_OPENERS = {".xz": lzma.decompress, ".gz": gzip.decompress, ".bz2": bz2.decompress}


def _decode(name: str, data: bytes) -> str:
    for suffix, decompress in _OPENERS.items():
        if name.endswith(suffix):
            data = decompress(data)
            break
    # utf-8-sig drops a BOM that spreadsheet exports add; replace keeps odd bytes from aborting a load
    return data.decode("utf-8-sig", errors="replace")


def data_text(relpath: str) -> str:
    """Text of a bundled data file, e.g. ``philly.csv.xz`` or ``helios/helios_diurnal.csv``."""
    ref = resources.files("rltune_daemon").joinpath("data", *relpath.split("/"))
    return _decode(relpath, ref.read_bytes())


def file_text(path: str | Path) -> str:
    """Text of a user file; raises a one-line ``UserError`` when it cannot be read."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{p}: is a directory, expected a trace file") from None
    except OSError as exc:
        raise UserError(f"{p}: cannot read ({exc.strerror})") from None
    try:
        return _decode(p.name, data)
    # each decompressor fails its own way: a bad .gz block is zlib.error, a cut .bz2 ValueError, a cut
    # .gz EOFError, a bad .bz2 header OSError
    except (lzma.LZMAError, zlib.error, OSError, EOFError, ValueError) as exc:
        raise InputFileError(str(p), None, f"corrupt compressed file ({exc})") from None


def lines(text: str) -> io.StringIO:
    """A text stream for ``csv.reader`` (newline handling as the csv module wants)."""
    return io.StringIO(text, newline="")


_LINE_END = re.compile(r"\r\n|\r|\n")


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` split at LF, CRLF and CR only, as ``csv.reader``, editors and ``sed -n Np``
    count them. ``str.splitlines`` also splits at form feeds, U+001C-U+001E, NEL and U+2028/9, which
    may sit inside a job or user name: it would cut that record in two and shift every later line
    number in error messages."""
    return _LINE_END.split(text)
