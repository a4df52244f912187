"""Lifeboat: turns AWS warnings about EC2 instances into Kubernetes node actions.

Data flows one way: ``events`` (parse) -> ``resolve`` -> ``decide`` (pure) -> ``act``.
``pipeline`` wires those steps for one message; the Lambda handler and ``lifeboat replay``
both call it.
"""

__version__ = "0.1.0"
