"""Root-cause diagnoses: the on-call's decision tree as host-level recordings and alerts.

Why a package: a diagnosis entry is checked (``params``) and resolved (``resolve`` →
``model``, its PromQL in ``evidence``), becomes a rule group (``rules``) and a generated
promtool test (``testgen``), the same shape as ``rulegen.alerts`` and ``rulegen.slo``.
"""
