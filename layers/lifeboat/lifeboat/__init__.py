"""Lifeboat: turns AWS warnings about EC2 instances into Kubernetes node actions.

Data flows one way: ``events`` (parse) -> ``resolve`` -> ``decide`` (pure) -> ``act``.
``pipeline`` wires those steps for one message; the Lambda handler and ``lifeboat replay``
both call it.

The layer's packages are ordered; a module may import only from its own package or one
below it (tests/unit/project/test_package_rules.py holds the layer to it and lists the few imports
that still run up, with what removes them). Order (bottom first): errors, model, events,
kube, marks, karpenter, wakeup, decide, telemetry, aws, rotation, flow, runtime.
"""

__version__ = "0.1.0"
