"""``make bench``: Lifeboat's performance harness (not a test suite: it measures, it does not
assert). Run with ``python -m bench``; ``--quick`` is a smoke configuration.

It drives the real handler, ``lifeboat.runtime.handler.handle_batch``, over a pipeline
assembled like
``lifeboat.runtime.service.build_service`` assembles it, with local endpoints: the Kubernetes API
emulator (with per-request latency), moto for EC2 and DynamoDB, wake-ups in memory.
"""
