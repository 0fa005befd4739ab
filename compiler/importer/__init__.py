"""`kueue-policy import`: a live cluster's Kueue objects -> a policy that compiles back to them.

export.py reads the files, translate.py/teams.py/pools.py write the policy documents,
roundtrip.py compiles them and compares the result with the export (semantic.py), output.py
writes the policy folder atomically.
"""
