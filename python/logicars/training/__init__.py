"""Training, in layers: `config` (TrainConfig, every setting declared once; a Preset holds
one, so it imports nothing above the tasks), `loop` (the epoch loop, `Run`, `Policy`,
`BatchSource`), `policies` (stop on solve, repair, restarts, lowest circuit, callbacks),
`pool` (growth's sample pool as a batch source), `interrupts` (Ctrl-C, preemption and
closed terminals, for a run and a sweep), `rundir` (a run's directory and metrics.csv)
and `summary` (summary.json). `logicars.train` composes them; this package imports none
of its modules, so that loading `config` loads nothing else."""
