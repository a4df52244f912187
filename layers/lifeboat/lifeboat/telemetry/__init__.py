"""What Lifeboat tells operators about its work: EMF metrics and structured logs
(observability), X-Ray traces (tracing) and Kubernetes Events (recorder).

May import model/, events.notice, decide's Decision and kube's client seam; imported by
flow/ and runtime/, never by decide/ or karpenter/.
"""
