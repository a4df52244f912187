"""The shared data every step passes along: settings, a message's deadline, the ledger
record, the Target a notice resolves to, the outcome and report of a decision, what EC2
knows about an instance (instances) and instants.

The bottom of the layer: may import only lifeboat.errors, each other and the event model
(lifeboat.events.notice); no I/O beyond what a seam passed in does.
"""
