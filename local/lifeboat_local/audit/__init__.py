"""``lifeboat audit``: what could go wrong before enabling Lifeboat or rotating nodes.

Layout, in the order data flows:

* ``sources`` reads a cluster file or a live cluster into an ``inventory.Inventory``;
* ``view.ClusterView`` adds the clock and the indexes checks share;
* the checks, pure functions from a view to issues, one module per concern: ``pdbs`` (with
  the disruption controller's arithmetic in ``expected``), ``workloads``, ``do_not_disrupt``,
  ``nodepools``, ``labels`` (rules in ``label_rules``) and ``ownership``;
* ``registry`` names each check and gives it its severity; ``render`` prints; ``command`` is
  the subcommand.
"""
