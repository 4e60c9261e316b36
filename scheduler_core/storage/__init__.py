"""Azure Storage adapters: clients, names and provisioning of the scheduler's tables and queues."""
