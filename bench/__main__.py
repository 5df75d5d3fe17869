"""``python -m bench``: run every benchmark; see ``bench/run.py`` and ``bench/README.md``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import main

raise SystemExit(main())
