"""Alertmanager routing: the resolved tree, how labels travel through it, and its checks.

Why a package: routing is one input file that becomes a config, its routing tests, and
reports about alerts no route serves; each is a module here (``load``, ``resolve``, ``model``,
``secrets``, ``config``: the data of the files, ``output``: the files and reports). amtool's
checks of the written files are in ``rulegen.validate.routing``.
"""
