"""L0-Bench procedural-correctness tasks: synthetic programs, their execution traces, and trace scoring.

Import-light on purpose: the generator and tracer modules use the standard library only, so tests can run them
under every available Python interpreter and compare traces byte for byte.
"""
