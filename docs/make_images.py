"""Make the pictures the README and docs show, from a results file:

    compilescope run sincos --stream 16,16,32,32,64,16,128,32 --strategies eager,default,static,dynamic \\
        --backend aot_eager --json out.json --html out.html
    python docs/make_images.py out.json out.html

docs/images/terminal.svg is the console report as rich renders it; docs/images/report.png is
the HTML report in headless Chromium (Debian's ``chromium``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from compilescope import load
from compilescope.analysis.build import build_run_report
from compilescope.render.console import renderables

IMAGES = Path(__file__).with_name("images")


def main(results: str, html: str) -> None:
    IMAGES.mkdir(exist_ok=True)
    console = Console(record=True, width=150, file=open("/dev/null", "w"))
    for part in renderables(build_run_report(load(results)))[:4]:
        console.print(part)
    console.save_svg(str(IMAGES / "terminal.svg"), title="compilescope run sincos")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("chromium is not installed: apt-get install chromium")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={IMAGES / 'report.png'}", "--window-size=1280,1600",
                    Path(html).resolve().as_uri()], check=True, capture_output=True, timeout=120)
    print(f"wrote {IMAGES / 'terminal.svg'} and {IMAGES / 'report.png'}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
