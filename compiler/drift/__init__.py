"""`kueue-policy drift`: the live cluster against what the policy compiles to."""
