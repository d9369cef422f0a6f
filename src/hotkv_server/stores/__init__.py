"""The typed in-process stores: pure data structures, no I/O, no RESP.

Every store takes the current time as an argument (``now_ms``) instead of reading a
clock, and changes only through ``apply(effect)``, so a live write, an AOF replay and a
replica run exactly the same code.
"""
