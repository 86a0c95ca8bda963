"""Headless Chromium (Debian's, which `.ci/run` installs): a page rendered to a PNG, with the
DOM it built and its console, for tests that check what a reader sees."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Debian's chromium is required (`apt-get install chromium`; .ci/run installs it)"
    return exe


def screenshot(page: Path, shot: Path, size: str = "1280,3000") -> subprocess.CompletedProcess[str]:
    """Headless Chromium renders `page` into `shot` and dumps its DOM (stdout) and console."""
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--log-level=0",
            f"--screenshot={shot}",
            f"--window-size={size}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
