"""Training, in layers: `config` (TrainConfig, every setting declared once; a Preset holds
one, so it imports nothing above the spec), `loop` (the epoch loop, `Run`, `Policy`,
`BatchSource`), `policies` (stop on solve, repair, restarts, lowest circuit, callbacks)
and `interrupts` (Ctrl-C and preemption). `logicars.train` composes them; this package
imports none of its modules, so that loading `config` loads nothing else."""
