"""What ``generate.py``, ``generate_llvm.py`` and ``generate_triton.py`` share: committed
outputs written only when their text changes, ``--check`` (nothing written, a non-zero exit
listing what would change) and outputs no generator makes any more removed as stale.

The scripts run as ``python tests/kernels/<script>.py``, so this folder is on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path


class Committed:
    """The outputs of one generator run; ``check``: compare only, write nothing."""

    def __init__(self, check: bool):
        self.check = check
        self.changed: list[str] = []
        self.stale: list[str] = []

    def write(self, dest: Path, text: str, label: str | None = None) -> bool:
        """Put ``text`` in ``dest`` (unless checking); True when that changes the file."""
        old = dest.read_text() if dest.exists() else None
        if old == text:
            return False
        self.changed.append(label or dest.name)
        if not self.check:
            dest.write_text(text)
        return True

    def remove_stale(self, folder: Path, expected: set[str]) -> None:
        """Remove (unless checking) the ``.ptx`` files of ``folder`` not in ``expected``."""
        for name in sorted(p.name for p in folder.glob("*.ptx") if p.name not in expected):
            print(f"  {name}: stale")
            self.stale.append(name)
            if not self.check:
                (folder / name).unlink()

    def exit_if_out_of_date(self) -> None:
        if self.check and (self.changed or self.stale):
            sys.exit(f"out of date: {', '.join(self.changed + self.stale)}")
