"""One message's way through Lifeboat: parse (events/) -> resolve -> decide (decide/, pure)
-> act. ``pipeline`` wires those steps for one message; ``routing`` sends a notice to its
cluster, ``split`` cuts large messages into parts, ``lanes`` orders work within a batch.

May import model/, events/, decide/, karpenter/, kube/, aws/, wakeup/, telemetry/ and
rotation/'s message detection; imported only by runtime/ and the local tools.
"""
