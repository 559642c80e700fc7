"""Progress people can see: a live bar per long stage on a terminal (tqdm: done/total, rate,
time left), a line every few seconds where stderr is piped (a log), nothing with
``--quiet``. A stage that ends before the first line is due prints nothing, so a short
build stays as quiet as it was."""

from __future__ import annotations

import shutil
import sys
import time
from types import TracebackType
from typing import Any, Literal

from urna.build.summary import Report, quiet

Mode = Literal["bar", "lines", "off"]
EVERY = 5.0  # seconds between two lines of a piped stage


def _size() -> tuple[int, int]:
    """The terminal's columns and lines (one that reports none, as a fresh pty does, gets
    100 x 24: tqdm would hide its bar below a screen of 0 lines)."""
    size = shutil.get_terminal_size((100, 24))
    return size.columns or 100, size.lines or 24


class Progress:
    """One stage's progress over ``total`` items."""

    def __init__(
        self, stage: str, total: int, unit: str, mode: Mode = "off", report: Report = quiet
    ) -> None:
        self.stage, self.total, self.unit, self.mode, self.report = stage, total, unit, mode, report
        self.done = 0
        self._t0 = self._last = time.monotonic()
        self._bar: Any = None
        if mode == "bar":
            try:
                from tqdm import tqdm
            except ImportError:  # tqdm comes with the embed extra; lines otherwise
                self.mode = "lines"
            else:
                self._bar = tqdm(
                    total=total,
                    unit=unit,
                    desc=stage,
                    file=sys.stderr,
                    leave=False,
                    delay=1.0,
                    ncols=(size := _size())[0],
                    nrows=size[1],
                )

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if self.mode == "lines" and now - self._last >= EVERY:
            self._last = now
            self.report(self.line(now - self._t0))

    def line(self, elapsed: float) -> str:
        """``embed: 1024/17979 chunks (5.7%), 52/s, 5:26 left``."""
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        share = 100 * self.done / self.total if self.total else 100.0
        return (
            f"{self.stage}: {self.done}/{self.total} {self.unit}s ({share:.1f}%), "
            f"{rate:.0f}/s, {int(left // 60)}:{int(left % 60):02d} left"
        )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.close()
