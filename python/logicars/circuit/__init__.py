"""The trained hard circuit and what is done with it, each through `Model.hard_circuit()`
and `Model.simulate`:

- `evaluate`: does the circuit solve its task on inputs it was not trained on
  (`Evaluation`, `validate` for the checks during training);
- `repair`: searches over gate ops that close its last wrong cells (greedy, drift);
- `analyze`: the paper's experiments (generalisation, fault tolerance, self-healing,
  robustness, gate usage);
- `export`: the pruned netlist, the pruning report and the export formats;
- `simulate`: the start states and targets of `logicars simulate`.

The modules are imported by name (`from logicars.circuit.evaluate import evaluate`);
`logicars.evaluate`, `logicars.repair` and `logicars.analyze` are the functions. This
file imports nothing, so that `Model` can import `export` without an import cycle.
"""
