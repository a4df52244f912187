"""One message's way through Lifeboat: parse (events/) -> resolve -> decide (decide/, pure)
-> act. ``pipeline`` takes a batch, taints the node of each of its involuntary notices
first (the batch's taint phase), and hands each message to the step for it:

- ``read`` reads a message: ``classify`` says what it is (the one place that does), then
  its kind's parser runs (``events`` for AWS's, ``wakeup``, ``rotation``); a sweep request
  is read by ``sweep_request`` (EC2 asked, holds checked, every notice triaged first);
- ``batch`` describes the batch's instances at once and holds what its messages share;
- ``notices`` handles each notice once (``routing``: triage; ``resolve``: the target; the
  pool's lease for a voluntary one); ``wake`` handles Lifeboat's own wake-ups;
- ``carry`` carries a decision out (``act``: the node's marks in ``act_node``, the
  replacement in ``act_replace``, the old claim in ``act_claim``, the drain in
  ``act_drain``), schedules its follow-ups and reports it;
- ``config`` holds what a pipeline is built with; ``split`` cuts large messages into
  parts, ``lanes`` orders work within a batch.

A Spot warning, from ``functions/interruption/app.py`` to its node's first PATCH (the
taint and cordon), crosses these modules, in the order first entered
(tests/unit/flow/test_spot_path.py replays one through the Lambda entry point and holds
this list to what runs)::

    functions/interruption/app.py        the Lambda entry point
    lifeboat.telemetry.tracing           the batch's trace
    lifeboat.runtime.handler             the SQS batch, its failures
    lifeboat.flow.pipeline               the batch, each message to its step
    lifeboat.flow.read                   one message read
    lifeboat.flow.classify               what it is: an AWS message
    lifeboat.events.envelope             its form, SNS removed
    lifeboat.events                      the parse, kind by kind
    lifeboat.model.instants              times read as UTC
    lifeboat.events.registry             the parser for its source and detail-type
    lifeboat.events.base                 fields read, each named in an error
    lifeboat.events.spot_interruption    the Spot warning's parser
    lifeboat.model.notice                the Notice
    lifeboat.aws.capacity_blocks         (a Capacity Block's notice: one per instance)
    lifeboat.events.capacity_block       (not one here)
    lifeboat.flow.batch                  the batch's instances, described at once
    lifeboat.model.deadline              how long a near deadline retries
    lifeboat.model.patience              (its bounds)
    lifeboat.flow.lookup                 EC2 asked; if it throttles, the NodeClaims (issue 36)
    lifeboat.model.instances             what EC2 says of the instance
    lifeboat.flow.resolve                the NodePools' opt-out verdicts (kept 10 s)
    lifeboat.flow.notices                the notice handled
    lifeboat.flow.lanes                  messages about one instance in one lane
    lifeboat.flow.config                 the clusters served, the actor
    lifeboat.aws.sweep                   (an impairment too recent: not here)
    lifeboat.flow.routing                triage: its cluster, managed here?
    lifeboat.decide.origin               from this stack's account and region?
    lifeboat.decide.staleness            not too old to act on
    lifeboat.kube.karpenter_api          the NodePool read (no verdict yet: a first batch)
    lifeboat.kube.transport              the Kubernetes API (its retries)
    lifeboat.marks.node_marks            Lifeboat's taint
    lifeboat.kube.nodes                  the node's names
    lifeboat.flow.act                    the actor (the steps of a decision, in order)
    lifeboat.flow.act_node               the guarded taint-and-cordon patch
    lifeboat.marks.node_patches          its JSON patch
    lifeboat.kube.core_api               -> PATCH /api/v1/nodes/... (the node's verbs)

Before issue 40.3 the same path crossed 29 modules in 70 moves from one to another, 11 of
them back into ``pipeline.py`` (a class of 31 methods); it now crosses 36 smaller ones (with
issue 36's lookup and act split by step, and the Kubernetes client split into its transport
and its verbs by API area) in 91 moves, 7 back into ``pipeline.py`` (6 methods), and no
class of the flow carries more than 9 methods, none of the layer more than 10
(tests/unit/project/test_class_size.py).

May import model/, events/, decide/, karpenter/, kube/, aws/, wakeup/, telemetry/ and
rotation/'s message names; imported only by runtime/ and the local tools.
"""
