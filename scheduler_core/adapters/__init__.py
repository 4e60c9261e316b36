"""Adapters of the ports (:mod:`scheduler_core.ports`): ``azure`` (Table and Queue Storage, the deployed
one) and ``memory`` (in-process, for tests and simulations). Only adapters, the action senders and
``function_app.py`` import Azure SDKs (``tests/unit/test_package_boundaries.py`` checks it)."""
