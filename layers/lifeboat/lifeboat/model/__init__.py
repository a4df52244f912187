"""The shared data every step passes along: settings, a message's deadline, the ledger
record, the Target a notice resolves to, the outcome and report of a decision, what EC2
knows about an instance (instances) and instants; the Notice every message is parsed into
(notice) and the JSON shape of Kubernetes objects (objects).

The bottom of the layer: may import only lifeboat.errors and each other; no I/O beyond what
a seam passed in does.
"""
