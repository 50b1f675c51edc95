"""``rulegen repair``: re-record an SLO's window recordings over the evaluations Prometheus
missed.

Why: a window is a sum of recordings read at offsets, so the events of a hole in the rule
evaluations (a restart, an overloaded evaluator) vanish from every window for as long as it
reaches back, and re-recording alone does not help (Prometheus keeps the samples it has).
This command finds the holes in each SLO's base recording, deletes the recordings the hole
affects (admin API), and re-evaluates every recording of the SLO's group in rule order over
that range from the raw series, writing each level back (remote-write receiver) before the
next one reads it: the values are the rules' own, fallbacks included.

Modules: ``model`` (what a repair is), ``plan`` (the specs' SLO groups, the holes and the
ranges to rewrite), ``remote`` (the remote-write encoding: protobuf and snappy by hand),
``write`` (the server's checks, deletion and writes), ``command`` (the subcommand).
"""
