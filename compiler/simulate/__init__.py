"""`kueue-policy simulate`: replay a job trace through a policy over time.

The modules, in the order a run uses them:

* `trace`   the trace model and its readers (YAML, CSV, Kueue export);
* `synth`   seeded synthetic traces from the declared workloads (`trace synth`);
* `driver`  the event loop: one admission engine carried from event to event;
* `metrics` waits, GPU-hours used, borrowed and lent, preemptions, shares, pool utilization;
* `compare` the same trace through two policies (`--compare REV`; what-if in `diff`/`pr`,
            compiler/deliver/whatif.py);
* `html`    a self-contained page with the charts of a run;
* `runner`  compile + trace + run + summarize, for the commands above;
* `cli`     the click commands.

Nothing is imported here: importing the trace model or the driver must not load the command line
(click, rich) nor the compile pipeline (jinja2); tests/compiler/test_structure.py checks what they load.
"""
