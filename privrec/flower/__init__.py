"""PFCR's federation on Flower: a bundle of per-domain data on disk, the ClientApp / ServerApp that
train the shared code-embedding table over it, and the two ways to run them (simulation, deployment).

* :mod:`privrec.flower.bundle` — what each client (domain) reads and writes: its sequences and item
  codes, the federation's configuration, per-round client checkpoints and global tables;
* :mod:`privrec.flower.apps` — Flower's ``ClientApp`` (local epochs, codec-encoded upload of the table
  change) and ``ServerApp`` (FedAvg / FedProx strategies whose aggregation decodes the uploads);
* :mod:`privrec.flower.run` — Flower's simulation engine, or a SuperLink and one SuperNode per domain
  as separate processes (deployment).
"""
