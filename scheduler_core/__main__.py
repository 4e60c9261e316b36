"""``python -m scheduler_core``: see :mod:`scheduler_core.cli`."""

from scheduler_core.cli import main

raise SystemExit(main())
