"""Privacy layer: mechanisms (arrays + Generator in, arrays + Guarantee out), accounting, audit.

Where is ...?
  the SDP sequence mechanism (PriCDSR)          -> privrec.privacy.sdp
  guarantees, certificates                      -> privrec.privacy.guarantee
  dp-accounting helpers, ledger                 -> privrec.privacy.accounting, privrec.privacy.ledger
  validation of epsilon / delta / ids           -> privrec.privacy.validate
  empirical audit (Clopper-Pearson lower bound) -> privrec.privacy.audit
"""

from privrec.privacy.guarantee import Claim, Guarantee

__all__ = ["Claim", "Guarantee"]
