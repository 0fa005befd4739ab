"""`kueue-policy capacity`: how many GPUs of which kind, cut how, guaranteed to whom.

The modules, in the order a run uses them:

* `targets`   targets and bounds, from flags or a targets file (file:line errors);
* `candidate` a candidate policy: the user's files with nodes, MIG cuts and guarantees changed
              (round-trip YAML, also what `--write` writes);
* `evaluate`  one candidate compiled and simulated with `simulate`'s own code, its targets checked;
* `workers`   where candidates run: here, forked local processes, or a Dask cluster;
* `search`    the deterministic search and the proof of its answer;
* `report`    the answer as JSON and tables; `html` the frontier page;
* `cli`       the click command.
"""
