"""Case databases committed xz-compressed (``*.db.xz``): served unpacked."""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

SUFFIX = ".xz"


def served_name(db: Path) -> str:
    """Name of `db` in the served folder: without `.xz` when it is packed."""
    name = db.name
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name


def place(db: Path, dest: Path) -> None:
    """Copies `db` to `dest`, decompressing it when it ends in `.xz`.

    A damaged archive raises OSError, like a failed copy; a partial output
    is removed so that a later run does not take it for a good copy.
    """
    if not db.name.endswith(SUFFIX):
        shutil.copyfile(db, dest)
        return
    try:
        with lzma.open(db, "rb") as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except (OSError, lzma.LZMAError, EOFError) as e:
        dest.unlink(missing_ok=True)
        raise OSError(f"cannot unpack {db}: {e}") from e
