"""Privacy layer: mechanisms (arrays + Generator in, arrays + Guarantee out), accounting, audit.

Where is ...?
  the SDP sequence mechanism (PriCDSR)              -> privrec.privacy.sdp
  JLT / SJLT rating publishing (PriCDR)             -> privrec.privacy.jlt (+ fwht: Walsh-Hadamard)
  JLT / SJLT noise calibration and accounting       -> privrec.privacy.jlt_accounting
  randomised response with alternatives (Mu & Lim)  -> privrec.privacy.rr (keep probabilities: rr_keep),
                                                       privrec.privacy.alternatives (text embeddings, k-NN: embeddings)
  user-feature LDP: piecewise + OUE (DIPSGNN)       -> privrec.privacy.features (schemas, encoding: feature_schema)
  noisy GNN aggregation, EdgeRand (DIPSGNN)         -> privrec.privacy.graph (Thm 4.2 accounting: graph_accounting)
  objective perturbation of MF, DPMF (DIPSGNN's [25]) -> privrec.privacy.objective
  federated gradient codec (PFCR)                   -> privrec.privacy.fedcodec (its guarantees: fedcodec_accounting)
  guarantees (certificates: privrec.release)       -> privrec.privacy.guarantee
  dp-accounting helpers, ledger                     -> privrec.privacy.accounting, privrec.privacy.ledger
  validation of epsilon / delta / ids               -> privrec.privacy.validate
  empirical audit (Clopper-Pearson lower bound)     -> privrec.privacy.audit, privrec.privacy.catalogue
  the mechanism registry (names, guarantees, audits)  -> privrec.privacy.registry
  literal slow reference paths                       -> tests/reference (not in the package)
"""

from privrec.privacy.guarantee import Claim, Guarantee

__all__ = ["Claim", "Guarantee"]
