"""Decision tests: the rules of dispatch, execution, the service and the job counter, on the in-memory
adapter (:mod:`scheduler_core.adapters.memory`) in simulated time. Actions run through the real senders
against real HTTP servers on 127.0.0.1."""
