"""The storage layout, as pure functions and names: keys (escaping, identities, shards, row keys) and the
names of the tables and queues. The adapters (``scheduler_core.adapters``) store by it."""
