"""``python -m cortex_memory.tools.mcp``: serve cortex_save and cortex_handoff on stdio."""

from __future__ import annotations

import sys

from cortex_memory.tools.mcp.cli import main

if __name__ == "__main__":
    sys.exit(main())
