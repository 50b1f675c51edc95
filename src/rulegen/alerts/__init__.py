"""Threshold alerts: one catalog signal (or a custom expression) compared with a threshold.

Why a package: an alert entry is resolved (``resolve`` → ``model``), becomes rules grouped by
signal family (``rules``) and a generated promtool test that proves when it fires
(``testgen``); the SLO and diagnosis packages have the same shape.
"""
