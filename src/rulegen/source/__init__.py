"""Reading what users write: YAML with positions, structural errors at those positions, the
field checks every resolver shares.

Why a package at the bottom: the spec, the routing file, signal definitions and user test
files are all read and reported on the same way, so nothing here knows the catalog, the spec
models or any feature; all of them import this.
"""
