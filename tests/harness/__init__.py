"""Fault and load harnesses the reliability tests drive; each also runs by hand for long.

    python -m tests.harness.crash [--cycles 300]       kill writers, reopen, count losses
    python -m tests.harness.torture [--seconds 120]    many processes on one vault at once
    python -m tests.harness.http_load [--seconds 30]   many HTTP clients, below and above the limit

Run them from the repository root. consistency.py holds the checks they share.
"""
